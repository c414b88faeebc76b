package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/lock"
)

// initConfigFile is the config file stowage init writes.
const initConfigFile = "config.cue"

// initTemplate is the starter config: one environment, one profile with
// one puller, and comments naming the fields a user adds next. Its values
// are CUE string literals (strconv.Quote of checked values).
var initTemplate = template.Must(template.New(initConfigFile).Parse(`// A stowage config: what must be on the nodes. stowage unifies every .cue,
// .yaml, .yml and .json file of this directory with its schema (print it
// with ` + "`stowage schema`" + `; the field reference is docs/config.md). Digests live
// in stowage.lock.yaml beside it: ` + "`stowage lock`" + ` fills it, ` + "`stowage bump`" + ` keeps
// it current, and ` + "`stowage render`" + ` never contacts a registry.
package stowage

// environments are named images, each with the credentials and the node
// placement it needs.
environments: {{.EnvName}}: {
	image: {{.Image}}
	// A private registry: a Secret that exists, or a username and a
	// password source (env:VARIABLE or file:PATH), never the password.
	// auth: secret: "registry-pull"
	// GPU images only on GPU nodes:
	// nodeSelector: "nvidia.com/gpu.present": "true"
	// tolerations: [{key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule"}]
}

// profiles are what one cluster pre-pulls: ` + "`stowage render --profile NAME`" + `.
profiles: {{.Profile}}: {
	pullers: [{
		// One DaemonSet per puller, in a namespace that exists.
		name:      "images"
		namespace: {{.Namespace}}
		environments: [{{.EnvRef}}]
	}]
	// An offline site: render names every image at the site registry,
	// and ` + "`stowage mirror`" + ` copies them there.
	// site: registry: "registry.site.example:5000"
}
`))

// initValues are the starter config's values, each a CUE string literal.
type initValues struct {
	EnvName, EnvRef, Image, Profile, Namespace string
}

// initReport is init -o json: the directory and the files written.
type initReport struct {
	Dir   string   `json:"dir"`
	Files []string `json:"files"`
}

func newInit() *cobra.Command {
	var image, namespace, profile, format string
	c := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a commented starter config and an empty lock into DIR (default .)",
		Long: `Write a starter config into DIR (default .; created if missing): config.cue
with one environment (--image), one profile (--profile) with one puller in
--namespace, and comments naming what to add next (credentials, GPU
placement, a site registry); and stowage.lock.yaml, an ImageLock with no
entries, for ` + "`stowage lock`" + ` to fill. After lock, vet and render pass.

init never overwrites: it refuses a DIR that holds a config file (.cue,
.yaml, .yml, .json) or a stowage.lock.yaml already.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat("-o", format, "text", "json"); err != nil {
				return err
			}
			dir := dirArg(args)
			if err := refuseStdout("DIR", dir, "init writes a directory; give its path"); err != nil {
				return err
			}
			vals, err := initValuesOf(image, namespace, profile)
			if err != nil {
				return err
			}
			var cfg bytes.Buffer
			if err := initTemplate.Execute(&cfg, vals); err != nil {
				return err
			}
			if err := initRefuse(dir); err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			files := []string{filepath.Join(dir, initConfigFile), filepath.Join(dir, lock.FileName)}
			if err := atomicfile.WriteFileContext(cmd.Context(), files[0], cfg.Bytes(), 0o644); err != nil {
				return err
			}
			if err := atomicfile.WriteFileContext(cmd.Context(), files[1], (&lock.Lock{}).Marshal(), 0o644); err != nil {
				os.Remove(files[0])
				return err
			}
			if format == "json" {
				return writeReport(cmd.OutOrStdout(), initReport{Dir: dir, Files: files})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %s; next: stowage lock %s && stowage vet %s\n", files[0], files[1], dir, dir)
			return nil
		},
	}
	c.Flags().StringVar(&image, "image", "apache/submarine:jupyter-notebook-0.7.0", "the environment's image reference")
	c.Flags().StringVar(&namespace, "namespace", "default", "the namespace of the puller's DaemonSet (it must exist in the cluster)")
	c.Flags().StringVarP(&profile, "profile", "p", "default", "the profile's name")
	c.Flags().StringVarP(&format, "output", "o", "text", "text, or json: {dir, files}")
	return c
}

// initValuesOf checks the flags and quotes them for the template: the
// image parses as a reference (go-containerregistry), the namespace and
// the profile are DNS labels. The environment is named after the image's
// repository's last path element.
func initValuesOf(image, namespace, profile string) (initValues, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return initValues{}, usageError{fmt.Errorf("--image %q: %v", image, err)}
	}
	for flag, v := range map[string]string{"--namespace": namespace, "--profile": profile} {
		if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
			return initValues{}, usageError{fmt.Errorf("%s %q: %s", flag, v, strings.Join(msgs, "; "))}
		}
	}
	repo := ref.Context().RepositoryStr()
	env := repo[strings.LastIndex(repo, "/")+1:]
	if msgs := validation.IsDNS1123Label(env); len(msgs) > 0 {
		env = "main"
	}
	return initValues{EnvName: strconv.Quote(env), EnvRef: strconv.Quote(env), Image: strconv.Quote(image),
		Profile: strconv.Quote(profile), Namespace: strconv.Quote(namespace)}, nil
}

// initRefuse refuses a DIR that exists and is no directory, or holds a
// config file or a lock.
func initRefuse(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s exists and is not a directory; give a new or empty directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var found []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".cue", ".yaml", ".yml", ".json":
			found = append(found, e.Name())
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("%s holds %s already: init never overwrites, and every such file there is part of the config; give a new directory", dir, strings.Join(found, ", "))
	}
	return nil
}
