package kustomization

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
)

// FuzzLoad: any kustomization file, resource file and functionConfig file
// in a kustomization directory, beside a canary file outside the root: no
// panic (kustomize's own panics are errors); the same result twice; an
// accepted build has the functionConfig, every item's file is a local
// path beneath the kustomization, the lock file is beneath the root, and
// nothing of the canary is read.
func FuzzLoad(f *testing.F) {
	lock := "apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nmetadata:\n  name: stowage-lock\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  images: []\n"
	f.Add("resources: [res.yaml, stowage.lock.yaml]\ntransformers: [s.yaml]\n", web, fnConfig)
	f.Add("resources: [res.yaml]\nimages:\n- name: nginx\n  newTag: \"1.28\"\nnamespace: prod\ntransformers: [s.yaml]\n", web, fnConfig)
	f.Add("resources: [../out/canary.yaml]\ntransformers: [s.yaml]\n", web, fnConfig)
	f.Add("resources: [res.yaml]\ntransformers: [s.yaml]\n", aliasBombOf("b", 6), fnConfig)
	f.Add("resources: [res.yaml]\ntransformers: [s.yaml]\n", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: [a, b]\n", fnConfig)
	f.Add("resources: [res.yaml]\npatches:\n- path: res.yaml\ntransformers:\n- |\n"+strings.ReplaceAll("  "+fnConfig, "\n", "\n  ")+"\n", web, "")
	f.Add("resources: [stowage.lock.yaml]\ntransformers: [s.yaml]\n", "", strings.Replace(fnConfig, "Stowage", "JupyterImagePuller", 1))
	f.Fuzz(func(t *testing.T, kust, res, fc string) {
		root := t.TempDir()
		dir := filepath.Join(root, "k")
		for p, c := range map[string]string{"k/kustomization.yaml": kust, "k/res.yaml": res, "k/s.yaml": fc, "k/stowage.lock.yaml": lock,
			"out/canary.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: canary}\ndata: {k: FUZZCANARY}\n"} {
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run := func() string {
			b, err := Load(dir, dir, isStowage)
			if err != nil {
				return "error: " + err.Error()
			}
			if b.FunctionConfig == nil {
				t.Fatalf("accepted without a functionConfig")
			}
			if b.LockFile != "" && !beneath(dir, b.LockFile) {
				t.Fatalf("lock file %s outside the root %s", b.LockFile, dir)
			}
			var out strings.Builder
			for _, it := range b.Items {
				s, err := it.String()
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(s, "FUZZCANARY") {
					t.Fatalf("an item holds the canary from outside the root:\n%s", s)
				}
				if p := it.GetAnnotations()[kioutil.PathAnnotation]; p != "" && !filepath.IsLocal(filepath.FromSlash(p)) {
					t.Fatalf("item file %q is not beneath the kustomization", p)
				}
				out.WriteString(s + "---\n")
			}
			return out.String()
		}
		if a, b := run(), run(); a != b {
			t.Fatalf("two loads differ:\n%s\n===\n%s", a, b)
		}
	})
}
