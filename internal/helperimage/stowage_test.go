package helperimage

import (
	"archive/tar"
	"context"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// stowageImageEnv turns TestStowageImage on: it compiles all of stowage
// for two platforms, longer than go test's default 10-minute limit on a
// loaded 2-core machine (run it with -timeout 30m).
const stowageImageEnv = "STOWAGE_REQUIRE_STOWAGE_IMAGE"

// TestStowageImage builds the stowage image (the CLI for an Argo CD
// plugin sidecar or a CI step) twice: the same index digest both times;
// linux/amd64 and linux/arm64, each config with its platform, the
// entrypoint /usr/local/bin/stowage, PATH /usr/local/bin and user 65534;
// one layer holding only usr/, usr/local/, usr/local/bin/ and the binary
// (0755, root, the Unix epoch) for the right machine; on linux/amd64 the
// amd64 binary runs `version` and names the version stamped in.
func TestStowageImage(t *testing.T) {
	if os.Getenv(stowageImageEnv) == "" {
		t.Skip("stowage image: SKIPPED building it (stowage cross-compiled for linux/amd64 and linux/arm64, several minutes cold); run make stowage-image, or set " + stowageImageEnv + "=1 to build and check it here")
	}
	const version = "v0.0.0-imagetest"
	build := func() v1.ImageIndex {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		idx, err := Stowage(version).Build(ctx, Options{ModuleDir: moduleDir(t)})
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	idx := build()
	d1, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d2, err := build().Digest(); err != nil || d2 != d1 {
		t.Fatalf("two builds of the stowage image: %s and %s (%v)", d1, d2, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != len(Platforms) {
		t.Fatalf("%d manifests, want %d", len(m.Manifests), len(Platforms))
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for i, desc := range m.Manifests {
		p := Platforms[i]
		if desc.Platform == nil || desc.Platform.OS != p.OS || desc.Platform.Architecture != p.Architecture {
			t.Errorf("manifest %d: platform %v, want %v", i, desc.Platform, p)
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != p.OS || cf.Architecture != p.Architecture || !slices.Equal(cf.Config.Entrypoint, []string{StowagePath}) ||
			!slices.Equal(cf.Config.Env, []string{"PATH=/usr/local/bin"}) || cf.Config.User != User || len(cf.Config.Cmd) != 0 {
			t.Errorf("%s config: %s/%s entrypoint %v cmd %v env %v user %q", p.Architecture, cf.OS, cf.Architecture, cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.Env, cf.Config.User)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: %d layers (%v), want 1", p.Architecture, len(layers), err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		var names []string
		var bin []byte
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, h.Name)
			if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
				t.Errorf("%s %s: mode %o owner %d:%d time %v", p.Architecture, h.Name, h.Mode, h.Uid, h.Gid, h.ModTime)
			}
			if h.Typeflag == tar.TypeReg {
				bin, _ = io.ReadAll(tr)
			}
		}
		rc.Close()
		if want := []string{"usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/stowage"}; !slices.Equal(names, want) {
			t.Errorf("%s layer: %v, want %v", p.Architecture, names, want)
		}
		f, err := elf.NewFile(strings.NewReader(string(bin)))
		if err != nil {
			t.Fatalf("%s: the binary is not ELF: %v", p.Architecture, err)
		}
		if f.Machine != machines[p.Architecture] {
			t.Errorf("%s: ELF machine %v", p.Architecture, f.Machine)
		}
		if p.Architecture == runtime.GOARCH && runtime.GOOS == "linux" {
			exe := filepath.Join(t.TempDir(), "stowage")
			if err := os.WriteFile(exe, bin, 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(exe, "version").CombinedOutput()
			if err != nil || !strings.Contains(string(out), version) {
				t.Errorf("the image's stowage version: %v\n%s", err, out)
			}
		}
	}
	t.Logf("stowage image %s", d1)
}
