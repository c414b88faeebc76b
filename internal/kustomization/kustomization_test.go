package kustomization

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// isStowage accepts the stowage functionConfig kinds (fn's rule,
// written out to keep this package's tests free of fn).
func isStowage(n *yaml.RNode) bool {
	return n.GetApiVersion() == "stowage.dev/v1alpha1" && n.GetKind() == "Stowage" ||
		n.GetApiVersion() == "org.apache.submarine/v1" && n.GetKind() == "JupyterImagePuller"
}

// write creates files (path relative to dir: content) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const fnConfig = `apiVersion: stowage.dev/v1alpha1
kind: Stowage
metadata:
  name: pins
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: stowage
        args: [fn]
spec: {}
`

const web = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      initContainers:
      - name: init
        image: busybox:1.36
      containers:
      - name: web
        image: nginx:1.27
`

func images(b *Build) []string {
	var out []string
	for _, it := range b.Items {
		for _, p := range []string{"initContainers", "containers"} {
			cs, _ := it.Pipe(yaml.Lookup("spec", "template", "spec", p))
			if cs == nil {
				continue
			}
			els, _ := cs.Elements()
			for _, c := range els {
				out = append(out, it.GetNamespace()+"/"+it.GetName()+" "+yaml.GetValue(c.Field("image").Value))
			}
		}
	}
	return out
}

// TestLoadRunsKustomizeBeforeTheFunction: the items are what kustomize
// hands the function: the images: override and the namespace applied, a
// transformer listed before stowage's run, the one after it not; the lock
// file is found through the base.
func TestLoadRunsKustomizeBeforeTheFunction(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, root, map[string]string{
		"base/kustomization.yaml": "resources: [web.yaml, stowage.lock.yaml]\n",
		"base/web.yaml":           web,
		"base/stowage.lock.yaml":  "apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nmetadata:\n  name: stowage-lock\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  images: []\n",
		"prod/kustomization.yaml": `resources: [../base]
namespace: prod
images:
- name: nginx
  newTag: "1.28"
transformers:
- suffix.yaml
- stowage.yaml
- prefix.yaml
`,
		"prod/suffix.yaml":  "apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata: {name: s}\nsuffix: -x\nfieldSpecs: [{path: metadata/name}]\n",
		"prod/prefix.yaml":  "apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata: {name: p}\nprefix: p-\nfieldSpecs: [{path: metadata/name}]\n",
		"prod/stowage.yaml": fnConfig,
	})
	b, err := Load(filepath.Join(root, "prod"), root, isStowage)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(images(b), "\n")
	want := "prod/web-x busybox:1.36\nprod/web-x nginx:1.28"
	if got != want {
		t.Errorf("images:\n%s\nwant:\n%s", got, want)
	}
	if want := filepath.Join(root, "prod", "../base/stowage.lock.yaml"); b.LockFile != want {
		t.Errorf("LockFile = %q, want %q", b.LockFile, want)
	}
	if b.FunctionConfig.GetName() != "pins" || b.FunctionFile != filepath.Join(root, "prod", "stowage.yaml") {
		t.Errorf("functionConfig %s from %s", b.FunctionConfig.GetName(), b.FunctionFile)
	}
	for _, it := range b.Items {
		if _, ok := it.GetAnnotations()[resourceOriginKey]; ok {
			t.Errorf("%s keeps the origin annotation", it.GetName())
		}
	}
}

// TestLoadRefuses: every way a kustomization could read outside its root
// or reach a network is refused before the build, naming the file.
func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		files map[string]string
		dir   string
		want  string
	}{
		"remote resource": {
			files: map[string]string{"k/kustomization.yaml": "resources: [https://example.invalid/x.yaml]\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig},
			want:  `resources[0] "https://example.invalid/x.yaml" is a remote resource: stowage reads local files only`,
		},
		"git base": {
			files: map[string]string{"k/kustomization.yaml": "resources:\n- github.com/example/repo//base?ref=v1\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig},
			want:  `resources[0] "github.com/example/repo//base?ref=v1" is a remote resource`,
		},
		"outside root": {
			files: map[string]string{"base/kustomization.yaml": "resources: [web.yaml]\n", "base/web.yaml": web,
				"k/kustomization.yaml": "resources: [../base]\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig},
			want: `resources[0] "../base" is outside the root`,
		},
		"remote patch": {
			files: map[string]string{"k/kustomization.yaml": "resources: [web.yaml]\npatches:\n- path: https://example.invalid/p.yaml\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig, "k/web.yaml": web},
			want:  `kustomization.yaml:3: patches[0].path: "https://example.invalid/p.yaml" is a URL: stowage reads no remote file`,
		},
		"remote generator file": {
			files: map[string]string{"k/kustomization.yaml": "resources: [web.yaml]\nconfigMapGenerator:\n- name: a\n  files: [a.txt]\n- name: b\n  files:\n  - k=http://127.0.0.1:1/x\ncrds:\n- https://example.invalid/crd.yaml\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig, "k/web.yaml": web, "k/a.txt": "a"},
			want:  `kustomization.yaml:5: configMapGenerator[1]: "k=http://127.0.0.1:1/x" is a URL: stowage reads no remote file`,
		},
		"remote crd": {
			files: map[string]string{"k/kustomization.yaml": "resources: [web.yaml]\ncrds:\n- local.yaml\n- https://example.invalid/crd.yaml\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig, "k/web.yaml": web, "k/local.yaml": "{}"},
			want:  `kustomization.yaml:4: crds[1]: "https://example.invalid/crd.yaml" is a URL: stowage reads no remote file`,
		},
		"helm": {
			files: map[string]string{"k/kustomization.yaml": "helmCharts:\n- name: x\n  repo: https://charts.example.invalid\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig},
			want:  "stowage does not inflate Helm charts",
		},
		"no function": {
			files: map[string]string{"k/kustomization.yaml": "resources: [web.yaml]\n", "k/web.yaml": web},
			want:  "declares no stowage KRM function",
		},
		"two functions": {
			files: map[string]string{"k/kustomization.yaml": "transformers: [s.yaml, t.yaml]\n", "k/s.yaml": fnConfig, "k/t.yaml": fnConfig},
			want:  "transformers[0] and transformers[1] both declare a stowage KRM function",
		},
		"remote name with a local twin": {
			// kustomize tries git before a local directory of the same name.
			files: map[string]string{"k/kustomization.yaml": "resources:\n- github.com/evil/repo\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig,
				"k/github.com/evil/repo/kustomization.yaml": "resources: [cm.yaml]\n", "k/github.com/evil/repo/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"},
			want: `resources[0] "github.com/evil/repo" is a remote resource`,
		},
		"http with a local twin": {
			files: map[string]string{"k/kustomization.yaml": "resources:\n- http://127.0.0.1:9/x.yaml\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig,
				"k/http:/127.0.0.1:9/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"},
			want: `resources[0] "http://127.0.0.1:9/x.yaml" is a remote resource`,
		},
		"dot-dot past the root into a twin": {
			// /../base must not be read as the root's own base/.
			files: map[string]string{"base/kustomization.yaml": "resources: [web.yaml]\n", "base/web.yaml": web,
				"k/base/kustomization.yaml": "resources: [web.yaml]\n", "k/base/web.yaml": web,
				"k/kustomization.yaml": "resources: [../base]\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig},
			want: `resources[0] "../base" is outside the root`,
		},
		"function before stowage": {
			files: map[string]string{"k/kustomization.yaml": "transformers: [sort.yaml, s.yaml]\n", "k/s.yaml": fnConfig,
				"k/sort.yaml": "apiVersion: example.com/v1\nkind: Sorter\nmetadata:\n  name: sort\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: sorter}\n"},
			want: `sort.yaml:6): Sorter sort is a KRM function running the program "sorter", which stowage does not run`,
		},
		"function after stowage": {
			files: map[string]string{"k/kustomization.yaml": "transformers:\n- s.yaml\n- run.yaml\n", "k/s.yaml": fnConfig,
				"k/run.yaml": "apiVersion: example.com/v1\nkind: Run\nmetadata:\n  name: r\n  annotations:\n    config.kubernetes.io/function: |\n      container: {image: example.invalid/run:1}\n"},
			want: `run.yaml:6): Run r is a KRM function running the container image "example.invalid/run:1", which stowage does not run`,
		},
		"validator": {
			files: map[string]string{"k/kustomization.yaml": "transformers: [s.yaml]\nvalidators: [v.yaml]\n", "k/s.yaml": fnConfig,
				"k/v.yaml": "apiVersion: example.com/v1\nkind: Check\nmetadata:\n  name: v\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: /bin/true}\n"},
			want: `v.yaml:6): Check v is a KRM function running the program "/bin/true", which stowage does not run`,
		},
		"function in a base": {
			files: map[string]string{"k/kustomization.yaml": "resources: [base]\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig,
				"k/base/kustomization.yaml": "generators: [g.yaml]\n", "k/base/g.yaml": "apiVersion: example.com/v1\nkind: Gen\nmetadata: {name: g}\n"},
			want: `base/kustomization.yaml:1: generators[0] (`,
		},
		"stowage function in a base": {
			files: map[string]string{"k/kustomization.yaml": "resources: [base]\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig,
				"k/base/kustomization.yaml": "transformers: [s.yaml]\n", "k/base/s.yaml": fnConfig},
			want: `is a stowage functionConfig in a kustomization the build reaches`,
		},
		"directory of transformers": {
			files: map[string]string{"k/kustomization.yaml": "transformers: [s.yaml, more]\n", "k/s.yaml": fnConfig,
				"k/more/kustomization.yaml": "resources: [p.yaml]\n", "k/more/p.yaml": "apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata: {name: p}\nprefix: p-\nfieldSpecs: [{path: metadata/name}]\n"},
			want: `kustomization.yaml:1: transformers[1] "more" is a directory`,
		},
		"legacy helm field": {
			files: map[string]string{"k/kustomization.yaml": "transformers: [s.yaml]\nhelmChartInflationGenerator:\n- chartName: x\n  chartRepoUrl: https://charts.example.invalid\n", "k/s.yaml": fnConfig},
			want:  `kustomization.yaml:2: helmChartInflationGenerator: stowage does not inflate Helm charts`,
		},
		"alias bomb": {
			files: map[string]string{"k/kustomization.yaml": "resources: [bomb.yaml]\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig, "k/bomb.yaml": aliasBomb()},
			want:  `resources[0] "bomb.yaml" was not read: a YAML file whose aliases expand to more than 1000000 nodes`,
		},
		"alias bombs split across files": {
			// Each file (380 bytes) expands to 358,035 nodes, under the
			// bound of one file; three of them pass it together.
			files: splitBombs(3),
			want:  `expand through their aliases to more than 1000000 nodes together by this file`,
		},
		"unknown field": {
			files: map[string]string{"k/kustomization.yaml": "resourcez: [web.yaml]\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig},
			want:  `k/kustomization.yaml:1:1: resourcez: field not allowed; did you mean "resources"? (allowed here: apiVersion, bases, `,
		},
		// The kustomization file is decoded by internal/strictyaml: each
		// problem at its line and column, with its field.
		"duplicate key": {
			files: map[string]string{"k/kustomization.yaml": "resources: [web.yaml]\ntransformers: [s.yaml]\nresources: [other.yaml]\n", "k/s.yaml": fnConfig, "k/web.yaml": web},
			want:  `k/kustomization.yaml:3:1: resources: duplicate key "resources": this mapping gives it at line 1 and again at line 3; a key appears once in a mapping (keep one)`,
		},
		"wrong type": {
			files: map[string]string{"k/kustomization.yaml": "resources: [web.yaml]\nimages:\n- name: nginx\n  newTag: 1.28\ntransformers: [s.yaml]\n", "k/s.yaml": fnConfig, "k/web.yaml": web},
			want:  `k/kustomization.yaml:4:11: images[0].newTag: a number where a string is expected (write it in quotes to make it a string)`,
		},
		"alias bomb in the kustomization": {
			files: map[string]string{"k/kustomization.yaml": "transformers: [s.yaml]\nhelmCharts:\n- name: c\n  valuesInline:\n" + indent(aliasBombOf("b", 5), "    "), "k/s.yaml": fnConfig},
			want:  `aliases expand to more than 50000 nodes, the limit`,
		},
		"deep nesting in the kustomization": {
			files: map[string]string{"k/kustomization.yaml": "transformers: [s.yaml]\nhelmCharts:\n- name: c\n  valuesInline:\n    a: " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "\n", "k/s.yaml": fnConfig},
			want:  `k/kustomization.yaml:5:`,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			write(t, root, c.files)
			dir := filepath.Join(root, "k")
			_, err := Load(dir, dir, isStowage)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			if name == "no function" && !errors.Is(err, ErrNoFunction) {
				t.Errorf("err does not wrap ErrNoFunction")
			}
		})
	}
}

// splitBombs is a kustomization listing n files of aliasBombOf(…, 5).
func splitBombs(n int) map[string]string {
	files := map[string]string{"k/s.yaml": fnConfig}
	var list []string
	for i := range n {
		f := fmt.Sprintf("bomb%d.yaml", i)
		files["k/"+f] = aliasBombOf(fmt.Sprintf("bomb%d", i), 5)
		list = append(list, f)
	}
	files["k/kustomization.yaml"] = "resources: [" + strings.Join(list, ", ") + "]\ntransformers: [s.yaml]\n"
	return files
}

// TestLoadRefusesLinkOutOfRoot: a symbolic link to a file outside the
// root is refused by name, before kustomize reads it.
func TestLoadRefusesLinkOutOfRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	write(t, outside, map[string]string{"secret.yaml": web})
	write(t, root, map[string]string{"kustomization.yaml": "resources: [web.yaml]\ntransformers: [s.yaml]\n", "s.yaml": fnConfig})
	if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(root, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := Load(root, "", isStowage)
	if err == nil || !strings.Contains(err.Error(), `resources[0] "web.yaml" was not read: a symbolic link that leads out of the root`) {
		t.Fatalf("err = %v, want it to name the link", err)
	}
}

// TestLoadListedLockNotWritten: a lock listed in resources but not
// written yet is where the lock goes.
func TestLoadListedLockNotWritten(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, root, map[string]string{"kustomization.yaml": "resources: [web.yaml, stowage.lock.yaml]\ntransformers: [s.yaml]\n", "s.yaml": fnConfig, "web.yaml": web})
	b, err := Load(root, "", isStowage)
	if err != nil {
		t.Fatal(err)
	}
	if b.LockFile != filepath.Join(root, "stowage.lock.yaml") || b.LockListed != "stowage.lock.yaml" {
		t.Errorf("LockFile %q, LockListed %q", b.LockFile, b.LockListed)
	}
	if got := strings.Join(images(b), ","); got != "/web busybox:1.36,/web nginx:1.27" {
		t.Errorf("images %s", got)
	}
}

// aliasBomb is a "billion laughs" YAML file: 9 levels of 10 aliases each.
func aliasBomb() string { return aliasBombOf("bomb", 9) }

// aliasBombOf is a ConfigMap called name whose data expands, through
// levels of ten aliases each, to about 10^levels nodes.
func aliasBombOf(name string, levels int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata:\n  a0: &a0 [\"lol\"]\n", name)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestLoadIgnoresWhatItDoesNotRead: files beneath the root that the build
// does not need — a large binary, a FIFO, a link leading out, another
// app's kustomization with helmCharts — do not fail it; a link to a
// directory inside the root and a kustomization file that is a link are
// followed, as kustomize follows them.
func TestLoadIgnoresWhatItDoesNotRead(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	write(t, root, map[string]string{
		"app/kustomization.yaml.real": "resources: [shared, stowage.lock.yaml]\ntransformers: [s.yaml]\n",
		"app/s.yaml":                  fnConfig,
		"realbase/kustomization.yaml": "resources: [web.yaml]\n",
		"realbase/web.yaml":           web,
		"other/kustomization.yaml":    "helmCharts:\n- name: x\n  repo: https://charts.example.invalid\nresources: [https://example.invalid/x.yaml]\n",
		"big.bin":                     strings.Repeat("x", 9<<20),
	})
	for link, target := range map[string]string{
		"app/kustomization.yaml": "kustomization.yaml.real",
		"app/shared":             "../realbase",
		"out":                    outside,
		"dangling":               filepath.Join(outside, "none"),
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	if err := mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Load(filepath.Join(root, "app"), root, isStowage)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(images(b), ","); got != "/web busybox:1.36,/web nginx:1.27" {
		t.Errorf("images %s", got)
	}
	if b.LockFile != filepath.Join(root, "app", "stowage.lock.yaml") {
		t.Errorf("LockFile %q", b.LockFile)
	}
}

// TestLoadBaseLockNotWritten: a lock listed by a base and not written
// yet is refused with the advice to list it in the kustomization that
// declares the transformer (a base's lock would be shared by overlays).
func TestLoadBaseLockNotWritten(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, root, map[string]string{
		"base/kustomization.yaml": "resources: [web.yaml, stowage.lock.yaml]\n",
		"base/web.yaml":           web,
		"ov/kustomization.yaml":   "resources: [../base]\ntransformers: [s.yaml]\n",
		"ov/s.yaml":               fnConfig,
	})
	_, err := Load(filepath.Join(root, "ov"), root, isStowage)
	want := `base/kustomization.yaml:1: resources[1] "stowage.lock.yaml" does not exist yet, and a lock in a base would be shared by every overlay`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestLoadBoundsEntries: a root of more entries than the bound (lowered
// here to 500 from MaxEntries) of empty directories is refused, naming the
// bound, instead of being walked to the end.
func TestLoadBoundsEntries(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, root, map[string]string{"kustomization.yaml": "transformers: [s.yaml]\n", "s.yaml": fnConfig})
	for i := 0; i < 600; i++ {
		if err := os.MkdirAll(filepath.Join(root, "d", strconv.Itoa(i/30), strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err := load(root, "", isStowage, 500)
	if want := "holds more than 500 files, directories and links; give a smaller --root"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestLoadIndexesEachFileOnce: the file and index annotations of 600
// objects of one file are right, and the file is parsed once, not once
// per object (3,000 objects in one file took 89 s that way).
func TestLoadIndexesEachFileOnce(t *testing.T) {
	t.Parallel()
	var many strings.Builder
	for i := range 600 {
		fmt.Fprintf(&many, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm%d\ndata: {k: v}\n", i)
	}
	root := t.TempDir()
	write(t, root, map[string]string{"kustomization.yaml": "resources: [many.yaml]\ntransformers: [s.yaml]\n", "s.yaml": fnConfig, "many.yaml": many.String()})
	b, err := Load(root, "", isStowage)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Items) != 600 {
		t.Fatalf("%d items, want 600", len(b.Items))
	}
	for _, it := range b.Items {
		a := it.GetAnnotations()
		if want := strings.TrimPrefix(it.GetName(), "cm"); a["internal.config.kubernetes.io/index"] != want || a["internal.config.kubernetes.io/path"] != "many.yaml" {
			t.Fatalf("%s: path %q index %q, want many.yaml and %s", it.GetName(), a["internal.config.kubernetes.io/path"], a["internal.config.kubernetes.io/index"], want)
		}
	}

	mem := filesys.MakeFsInMemory()
	if err := mem.WriteFile("/many.yaml", []byte(many.String())); err != nil {
		t.Fatal(err)
	}
	x := newFileIndex(mem)
	for i, it := range b.Items {
		if got, ok := x.at("/many.yaml", it); !ok || got != i {
			t.Fatalf("%s at %d, %v; want %d", it.GetName(), got, ok, i)
		}
	}
	if x.parses != 1 {
		t.Errorf("many.yaml parsed %d times for 600 objects, want once", x.parses)
	}
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix) + "\n"
}
