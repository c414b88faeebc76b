package testbin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// CMP is an Argo CD ConfigManagementPlugin (the plugin.yaml that
// argocd-cmp-server reads from /home/argocd/cmp-server/config/), with the
// fields of argo-cd's cmpserver/plugin PluginConfig.
type CMP struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version  string     `json:"version"`
		Init     CMPCommand `json:"init"`
		Generate CMPCommand `json:"generate"`
		Discover struct {
			FileName string `json:"fileName"`
			Find     struct {
				CMPCommand `json:",inline"`
				Glob       string `json:"glob"`
			} `json:"find"`
		} `json:"discover"`
		PreserveFileMode bool `json:"preserveFileMode"`
	} `json:"spec"`
}

// CMPCommand is one command of a plugin: argocd-cmp-server runs
// Command[0] with Command[1:] and then Args as its arguments (argo-cd
// cmpserver/plugin runCommand: exec.CommandContext, no shell of its own).
type CMPCommand struct {
	Command []string `json:"command"`
	Args    []string `json:"args"`
}

// Name is the plugin name an Application's spec.source.plugin.name gives:
// metadata.name, then "-" and spec.version when there is one.
func (p *CMP) Name() string {
	if p.Spec.Version == "" {
		return p.Metadata.Name
	}
	return p.Metadata.Name + "-" + p.Spec.Version
}

// ReadCMP reads a plugin.yaml strictly (an unknown field fails the test)
// and checks it is a ConfigManagementPlugin with a generate command.
func ReadCMP(tb testing.TB, path string) *CMP {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var p CMP
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	if p.APIVersion != "argoproj.io/v1alpha1" || p.Kind != "ConfigManagementPlugin" {
		tb.Fatalf("%s: %s %s, want argoproj.io/v1alpha1 ConfigManagementPlugin", path, p.APIVersion, p.Kind)
	}
	if len(p.Spec.Generate.Command) == 0 {
		tb.Fatalf("%s: spec.generate.command is empty", path)
	}
	return &p
}

// CopyApp copies the regular files and directories beneath src into a
// fresh directory, as the repo server streams an application's files to
// argocd-cmp-server (which unpacks them into a new temporary directory
// per request), and returns that directory's path. File modes are 0644
// and 0755 for directories: without spec.preserveFileMode Argo CD does not
// keep them.
func CopyApp(tb testing.TB, src string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		default:
			return fmt.Errorf("%s: not a regular file or directory", p)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return dst
}

// AppEnv is the environment the repo server sends argocd-cmp-server for
// an Application (argo-cd reposerver's getPluginEnvs: the build
// environment, then each plugin env entry as ARGOCD_ENV_<NAME>), for app
// name, namespace and plugin env. The values of the build environment
// other than the name and namespace are fixed examples.
func AppEnv(name, namespace string, pluginEnv map[string]string) []string {
	env := []string{
		"ARGOCD_APP_NAME=" + name,
		"ARGOCD_APP_NAMESPACE=" + namespace,
		"ARGOCD_APP_PROJECT_NAME=default",
		"ARGOCD_APP_REVISION=0123456789abcdef0123456789abcdef01234567",
		"ARGOCD_APP_REVISION_SHORT=0123456",
		"ARGOCD_APP_SOURCE_PATH=examples/gitops-argo/prepull",
		"ARGOCD_APP_SOURCE_REPO_URL=https://git.example.org/platform/gitops.git",
		"ARGOCD_APP_SOURCE_TARGET_REVISION=main",
		"KUBE_VERSION=1.37.2",
		"KUBE_API_VERSIONS=v1,apps/v1",
	}
	for k, v := range pluginEnv {
		env = append(env, "ARGOCD_ENV_"+k+"="+v)
	}
	return env
}

// RunCMP runs c in dir with env as argocd-cmp-server does: Command[0]
// with Command[1:] and Args, in dir, with exactly env (the server's own
// environment, here given by the caller, then the request's entries), and
// a time limit of 2 minutes. It returns stdout, stderr and the exit code
// (-1 when the command did not start).
func RunCMP(tb testing.TB, c CMPCommand, dir string, env []string) (stdout, stderr []byte, code int) {
	tb.Helper()
	if len(c.Command) == 0 {
		tb.Fatal("plugin command is empty")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Command[0], append(c.Command[1:], c.Args...)...)
	// exec.Command looks a bare name up in this process's PATH; the
	// server's is the one in env.
	if !strings.Contains(c.Command[0], "/") {
		cmd.Path = lookPath(c.Command[0], env)
		cmd.Err = nil
	}
	cmd.Dir = dir
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		tb.Logf("%v: %v", c.Command, err)
		code = -1
	}
	return out.Bytes(), errb.Bytes(), code
}

// lookPath finds name in the directories of env's PATH ("" when none
// holds it, so that the command fails to start).
func lookPath(name string, env []string) string {
	for _, kv := range env {
		if dirs, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(dirs) {
				p := filepath.Join(d, name)
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					return p
				}
			}
		}
	}
	return name
}

// Manifests parses every YAML document of a plugin's stdout, as Argo CD
// splits it into manifests, and returns each as JSON. The test fails
// unless every document is a Kubernetes object (apiVersion, kind and
// metadata.name set) and there is at least one: Argo CD refuses anything
// else on stdout.
func Manifests(tb testing.TB, stdout []byte) [][]byte {
	tb.Helper()
	dec := yamlv3.NewDecoder(bytes.NewReader(stdout))
	var docs [][]byte
	for i := 0; ; i++ {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatalf("stdout document %d is not YAML of an object: %v\n%s", i, err, stdout)
		}
		md, _ := doc["metadata"].(map[string]any)
		if doc["apiVersion"] == nil || doc["kind"] == nil || md == nil || md["name"] == nil {
			tb.Fatalf("stdout document %d is not a Kubernetes object (apiVersion, kind, metadata.name): %v", i, doc)
		}
		j, err := json.Marshal(doc)
		if err != nil {
			tb.Fatal(err)
		}
		docs = append(docs, j)
	}
	if len(docs) == 0 {
		tb.Fatalf("no object on stdout:\n%s", stdout)
	}
	return docs
}
