// Package helperimage builds stowage's own helper image: a multi-arch OCI
// image index (linux/amd64 and linux/arm64) whose images hold nothing but
// the static cmd/stowage-helper binary at /stowage-helper. It is assembled
// with go-containerregistry (empty, mutate, layout), without Docker, and is
// reproducible: the same source and Go toolchain give the same index digest
// on every machine.
//
// What fixes the bytes:
//   - the binary: `go build` with CGO_ENABLED=0, -trimpath, -buildvcs=false,
//     -ldflags "-s -w -buildid=", GOOS=linux, GOAMD64=v1 or GOARM64=v8.0, and
//     GOFLAGS and GOEXPERIMENT cleared, so the environment of the machine
//     does not reach the compiler;
//   - the layer: one tar entry "stowage-helper", mode 0755, owned by root
//     (uid 0, gid 0, no user or group names), modification time the Unix
//     epoch, gzip at level 9;
//   - the config: os and architecture set, created the Unix epoch, entrypoint
//     /stowage-helper with the command "wait", user 65534 (the user the
//     rendered DaemonSets run as); one history entry with the same time;
//   - OCI media types for the index, manifests, configs and layers.
//
// Root owns the binary so that the non-root user the containers run as can
// execute it but never change it.
package helperimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Package is the Go package of the helper binary, built from the module
// root.
const Package = "./cmd/stowage-helper"

// Path is where the binary sits in the image; the DaemonSets run it there.
const Path = "/stowage-helper"

// User is the config's user, the one the rendered DaemonSets run as.
const User = "65534"

// RefNameAnnotation is the OCI annotation naming the image in the layout's
// index.json (its value is the full reference, e.g.
// ghcr.io/stowage/stowage-helper:v0.1.0).
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// Platforms are the platforms of the image index, in index order.
var Platforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64"},
}

// epoch is every timestamp of the image.
var epoch = time.Unix(0, 0).UTC()

// Env variables that change what `go build` produces; they are removed
// from the inherited environment and set to fixed values where needed.
var buildEnvVars = []string{
	"GOFLAGS", "GOOS", "GOARCH", "GOAMD64", "GOARM", "GOARM64", "GO386",
	"GOMIPS", "GOMIPS64", "GOPPC64", "GORISCV64", "GOWASM", "GOEXPERIMENT",
	"CGO_ENABLED", "CGO_CFLAGS", "CGO_CPPFLAGS", "CGO_CXXFLAGS", "CGO_LDFLAGS",
}

// archLevel is the fixed microarchitecture level per GOARCH.
var archLevel = map[string]string{"amd64": "GOAMD64=v1", "arm64": "GOARM64=v8.0"}

// Options say where the source is and how to run the Go toolchain.
type Options struct {
	// ModuleDir is the root of the stowage module (holding go.mod).
	ModuleDir string
	// Go is the go command; "go" (from $PATH) when empty.
	Go string
	// Env is the base environment of `go build`; os.Environ() when nil.
	// The variables that change the output are replaced in any case.
	Env []string
	// Stderr receives the build's output; discarded when nil.
	Stderr io.Writer
}

// Program is a binary an image of this package holds and how the image
// runs it: Helper, or Stowage (the stowage CLI, for an Argo CD Config
// Management Plugin sidecar or a CI step). The build, layer and config
// rules above apply to every Program.
type Program struct {
	// Package is the Go package, from the module root.
	Package string
	// Path is where the binary sits in the image (absolute).
	Path string
	// Ldflags are added to "-s -w -buildid=" (for example -X flags).
	Ldflags string
	// Config is the image config's runtime part (entrypoint, user, env).
	Config v1.Config
}

// Helper is the helper image's Program: /stowage-helper, run as "wait" by
// user 65534.
var Helper = Program{Package: Package, Path: Path, Config: v1.Config{Entrypoint: []string{Path}, Cmd: []string{"wait"}, User: User}}

// StowagePath is where the stowage image holds the stowage binary; PATH
// of its config is its directory, so an Argo CD plugin command (and the
// exec KRM function a kustomization declares) finds "stowage".
const StowagePath = "/usr/local/bin/stowage"

// Stowage is the stowage image's Program for version (stamped into
// internal/version like `make build` does; "" leaves the binary's build
// information to say): /usr/local/bin/stowage as the entrypoint, PATH
// /usr/local/bin, user 65534; no shell and nothing else in the image.
func Stowage(version string) Program {
	p := Program{Package: "./cmd/stowage", Path: StowagePath, Config: v1.Config{
		Entrypoint: []string{StowagePath},
		Env:        []string{"PATH=/usr/local/bin"},
		User:       User,
	}}
	if version != "" {
		p.Ldflags = "-X github.com/stowage/stowage/internal/version.version=" + version
	}
	return p
}

// BuildBinary compiles the helper for linux/goarch into a new file under
// dir and returns its path. Errors carry the go command's output.
func BuildBinary(ctx context.Context, o Options, goarch, dir string) (string, error) {
	return Helper.BuildBinary(ctx, o, goarch, dir)
}

// BuildBinary compiles p for linux/goarch into a new file under dir and
// returns its path. Errors carry the go command's output.
func (p Program) BuildBinary(ctx context.Context, o Options, goarch, dir string) (string, error) {
	level, ok := archLevel[goarch]
	if !ok {
		return "", fmt.Errorf("helper image: unsupported architecture %q (amd64 or arm64)", goarch)
	}
	goCmd := o.Go
	if goCmd == "" {
		goCmd = "go"
	}
	out := filepath.Join(dir, filepath.Base(p.Path)+"-linux-"+goarch)
	ldflags := "-s -w -buildid="
	if p.Ldflags != "" {
		ldflags += " " + p.Ldflags
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-buildvcs=false",
		"-ldflags="+ldflags, "-o", out, p.Package)
	cmd.Dir = o.ModuleDir
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(cleanEnv(env), "GOOS=linux", "GOARCH="+goarch, level, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if o.Stderr != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&log, o.Stderr), io.MultiWriter(&log, o.Stderr)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("image of %s: go build for linux/%s: %v\n%s", p.Package, goarch, err, strings.TrimSpace(log.String()))
	}
	return out, nil
}

// cleanEnv drops the variables of buildEnvVars from env.
func cleanEnv(env []string) []string {
	drop := map[string]bool{}
	for _, k := range buildEnvVars {
		drop[k] = true
	}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	return out
}

// Layer returns the image layer holding binary as p.Path, mode 0755, owned
// by root, with epoch timestamps, gzip-compressed; the directories above
// it are entries of their own (mode 0755, root, epoch) written first.
func (p Program) Layer(binary []byte) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	name := strings.TrimPrefix(p.Path, "/")
	for i := range len(name) {
		if name[i] == '/' {
			dir := &tar.Header{Typeflag: tar.TypeDir, Name: name[:i+1], Mode: 0o755, ModTime: epoch, Format: tar.FormatUSTAR}
			if err := tw.WriteHeader(dir); err != nil {
				return nil, err
			}
		}
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o755,
		Size:     int64(len(binary)),
		ModTime:  epoch,
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	tarBytes := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
}

// Image returns prog's single-platform image for p holding binary.
func (prog Program) Image(p v1.Platform, binary []byte) (v1.Image, error) {
	layer, err := prog.Layer(binary)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Created:      v1.Time{Time: epoch},
		RootFS:       v1.RootFS{Type: "layers"},
		Config:       prog.Config,
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "stowage helper-image: " + prog.Path},
	})
}

// Build compiles the helper for every entry of Platforms and returns the
// OCI image index of their images, in Platforms order.
func Build(ctx context.Context, o Options) (v1.ImageIndex, error) { return Helper.Build(ctx, o) }

// Build compiles prog for every entry of Platforms and returns the OCI
// image index of their images, in Platforms order.
func (prog Program) Build(ctx context.Context, o Options) (v1.ImageIndex, error) {
	dir, err := os.MkdirTemp("", "stowage-helper-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range Platforms {
		bin, err := prog.BuildBinary(ctx, o, p.Architecture, dir)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		img, err := prog.Image(p, b)
		if err != nil {
			return nil, fmt.Errorf("image of %s: linux/%s: %w", prog.Package, p.Architecture, err)
		}
		plat := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &plat},
		})
	}
	return idx, nil
}

// WriteLayout writes idx as a new OCI image layout at dir, which must not
// exist yet; index.json names it with ref in RefNameAnnotation. The layout
// is written into a temporary directory beside dir and renamed into place,
// so dir never holds a half-written layout.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("helper image: %s already exists", dir)
	} else if !os.IsNotExist(err) {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	var opts []layout.Option
	if ref != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{RefNameAnnotation: ref}))
	}
	if err := p.AppendIndex(idx, opts...); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// DefaultReference is where the project publishes the helper image
// (.github/workflows/release-helper.yml) and the schema's default for
// helper.image.
const DefaultReference = "ghcr.io/stowage/stowage-helper:v0.1.0"
