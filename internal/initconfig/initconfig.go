// Package initconfig writes the starter config of `stowage init`: a
// commented config.cue with one environment, one profile and one puller,
// and an empty lock beside it, into a directory that holds no config yet.
package initconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/lock"
)

// ConfigFile is the name of the config file Write writes.
const ConfigFile = "config.cue"

// starter is the starter config: one environment, one profile with
// one puller, and comments naming the fields a user adds next. Its values
// are CUE string literals (strconv.Quote of checked values).
var starter = template.Must(template.New(ConfigFile).Parse(`// A stowage config: what must be on the nodes. stowage unifies every .cue,
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

// values are the starter config's values, each a CUE string literal.
type values struct {
	EnvName, EnvRef, Image, Profile, Namespace string
}

// Options are what the starter config names: the environment's image
// reference, the namespace of the puller's DaemonSet and the profile.
type Options struct {
	Image, Namespace, Profile string
}

// FlagError is an Options value that is refused; Flag names its flag
// ("--image").
type FlagError struct {
	Flag string
	Err  error
}

// Error is "<flag> <value and reason>".
func (e *FlagError) Error() string { return e.Flag + " " + e.Err.Error() }

// Unwrap returns the reason.
func (e *FlagError) Unwrap() error { return e.Err }

// Config returns the starter config for o. The image must parse as a
// reference (go-containerregistry) and the namespace and the profile be
// DNS labels, else a *FlagError. The environment is named after the
// image's repository's last path element ("main" when that is no DNS
// label).
func Config(o Options) ([]byte, error) {
	ref, err := name.ParseReference(o.Image)
	if err != nil {
		return nil, &FlagError{"--image", fmt.Errorf("%q: %v", o.Image, err)}
	}
	for _, f := range []struct{ flag, v string }{{"--namespace", o.Namespace}, {"--profile", o.Profile}} {
		if msgs := validation.IsDNS1123Label(f.v); len(msgs) > 0 {
			return nil, &FlagError{f.flag, fmt.Errorf("%q: %s", f.v, strings.Join(msgs, "; "))}
		}
	}
	repo := ref.Context().RepositoryStr()
	env := repo[strings.LastIndex(repo, "/")+1:]
	if msgs := validation.IsDNS1123Label(env); len(msgs) > 0 {
		env = "main"
	}
	var b bytes.Buffer
	err = starter.Execute(&b, values{EnvName: strconv.Quote(env), EnvRef: strconv.Quote(env), Image: strconv.Quote(o.Image),
		Profile: strconv.Quote(o.Profile), Namespace: strconv.Quote(o.Namespace)})
	return b.Bytes(), err
}

// Write writes config as dir/ConfigFile and an empty lock as
// dir/stowage.lock.yaml, each atomically, creating dir when missing, and
// returns the two paths. It refuses a dir that exists and is no
// directory, or holds a config file (.cue, .yaml, .yml, .json) already:
// init never overwrites. When the lock cannot be written the config is
// removed again.
func Write(ctx context.Context, dir string, config []byte) ([]string, error) {
	if err := refuse(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := []string{filepath.Join(dir, ConfigFile), filepath.Join(dir, lock.FileName)}
	if err := atomicfile.WriteFileContext(ctx, files[0], config, 0o644); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFileContext(ctx, files[1], (&lock.Lock{}).Marshal(), 0o644); err != nil {
		os.Remove(files[0])
		return nil, err
	}
	return files, nil
}

// refuse refuses a DIR that exists and is no directory, or holds a
// config file or a lock.
func refuse(dir string) error {
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
