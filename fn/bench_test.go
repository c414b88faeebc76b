package fn_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkKustomizeBuild times `kustomize build` of the Argo CD example with
// the stowage function and of the same kustomization without it, side by
// side: the difference is what the function adds (goal: under 100 ms).
func BenchmarkKustomizeBuild(b *testing.B) {
	kustomize := kustomizeBinB(b)
	dir := b.TempDir()
	bin := filepath.Join(dir, "bin")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "stowage"), "../cmd/stowage").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")

	with := filepath.Join(dir, "with")
	without := filepath.Join(dir, "without")
	copyDir(b, "../examples/gitops-argo/prepull", with)
	copyDir(b, "../examples/gitops-argo/prepull", without)
	k, err := os.ReadFile(filepath.Join(without, "kustomization.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	k, _, _ = bytes.Cut(k, []byte("transformers:"))
	if err := os.WriteFile(filepath.Join(without, "kustomization.yaml"), k, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, dir string }{{"without-function", without}, {"with-function", with}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(kustomize, "build", "--enable-alpha-plugins", "--enable-exec", bc.dir)
				cmd.Env = append(os.Environ(), "PATH="+path)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("kustomize build: %v\n%s", err, out)
				}
			}
		})
	}
}

func kustomizeBinB(b *testing.B) string {
	if p, err := exec.LookPath("kustomize"); err == nil {
		return p
	}
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(string(bytes.TrimSpace(gopath)), "bin", "kustomize")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	b.Skip("kustomize not installed")
	return ""
}

func copyDir(b *testing.B, src, dst string) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		b.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
