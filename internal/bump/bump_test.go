package bump

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/schema"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func load(t *testing.T, dir string) *v1alpha1.Config {
	t.Helper()
	cfg, err := schema.Load(filepath.Join("testdata", dir), schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// images is the whole config's plan, as lock and bump resolve it.
func images(t *testing.T, dir string) []*plan.Image {
	t.Helper()
	p, err := plan.All(load(t, dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.Images
}

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// locks are an old and a new lock with every kind of change: a digest
// bump, a manifest that became an index, an added and a removed entry, and
// an unchanged entry that must not be listed.
func locks() (old, new *lock.Lock) {
	old, new = &lock.Lock{}, &lock.Lock{}
	same := lock.Entry{Name: "registry.lab.internal/pause:3.10", Reference: "registry.lab.internal/pause:3.10", Digest: digest('1'), Kind: lock.KindManifest, Size: 300}
	old.Put(same)
	new.Put(same)
	old.Put(lock.Entry{Name: "docker.io/apache/submarine:jupyter-notebook-0.7.0", Reference: "apache/submarine:jupyter-notebook-0.7.0", Digest: digest('a'), Kind: lock.KindManifest, Size: 1000})
	new.Put(lock.Entry{Name: "docker.io/apache/submarine:jupyter-notebook-0.7.0", Reference: "apache/submarine:jupyter-notebook-0.7.0", Digest: digest('b'), Kind: lock.KindManifest, Size: 1200})
	old.Put(lock.Entry{Name: "harbor.lab.internal:5000/apache/submarine:gpu-0.7.0", Reference: "harbor.lab.internal:5000/apache/submarine:gpu-0.7.0", Digest: digest('c'), Kind: lock.KindManifest, Size: 5000})
	new.Put(lock.Entry{Name: "harbor.lab.internal:5000/apache/submarine:gpu-0.7.0", Reference: "harbor.lab.internal:5000/apache/submarine:gpu-0.7.0", Digest: digest('d'), Kind: lock.KindIndex, Platforms: []lock.Platform{
		{Platform: "linux/amd64", Digest: digest('e'), Size: 5100},
		{Platform: "linux/arm64/v8", Digest: digest('f'), Size: 5200},
	}})
	new.Put(lock.Entry{Name: "registry.lab.internal/stowage-helper:v1", Reference: "registry.lab.internal/stowage-helper:v1", Digest: digest('2'), Kind: lock.KindManifest, Size: 400})
	old.Put(lock.Entry{Name: "quay.io/prometheus/node-exporter:v1.0.0", Reference: "quay.io/prometheus/node-exporter:v1.0.0", Digest: digest('3'), Kind: lock.KindManifest, Size: 900})
	return old, new
}

func TestDiff(t *testing.T) {
	t.Parallel()
	old, new := locks()
	images := images(t, "config")
	changes := Diff(old, new, images)
	var got []string
	for _, c := range changes {
		what := "changed"
		switch {
		case c.Added():
			what = "added"
		case c.Removed():
			what = "removed"
		case c.KindChanged():
			what = "kind changed"
		}
		got = append(got, what+" "+c.Key)
	}
	want := []string{
		"changed docker.io/apache/submarine:jupyter-notebook-0.7.0",
		"kind changed harbor.lab.internal:5000/apache/submarine:gpu-0.7.0",
		"removed quay.io/prometheus/node-exporter:v1.0.0",
		"added registry.lab.internal/stowage-helper:v1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
	if len(changes[0].Uses) != 2 || changes[2].Uses != nil {
		t.Errorf("uses: changed entry %v, removed entry %v", changes[0].Uses, changes[2].Uses)
	}
	if d := Diff(new, new, images); len(d) != 0 {
		t.Errorf("Diff of a lock with itself = %v", d)
	}
}

// TestBodyGolden compares the PR body and JSON report with
// testdata/*.golden; -update rewrites them.
func TestBodyGolden(t *testing.T) {
	t.Parallel()
	old, new := locks()
	images := images(t, "config")
	changes := Diff(old, new, images)
	body := Body(changes, BodyOptions{LockFile: "platform/stowage.lock.yaml", RenderDir: "clusters/prod/prepull"})
	rep, err := json.MarshalIndent(NewReport(changes, BodyOptions{LockFile: "platform/stowage.lock.yaml"}), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	one := Diff(old, new, images)[:1]
	for _, g := range []struct {
		file string
		got  []byte
	}{
		{"body.md.golden", []byte(body)},
		{"body-one.md.golden", []byte(Title(one) + "\n\n" + Body(one, BodyOptions{}))},
		{"report.json.golden", append(rep, '\n')},
	} {
		path := filepath.Join("testdata", g.file)
		if *update {
			if err := os.WriteFile(path, g.got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./internal/bump -update writes it)", err)
		}
		if !bytes.Equal(g.got, want) {
			t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, g.got, want)
		}
	}
}

func TestTitle(t *testing.T) {
	t.Parallel()
	old, new := locks()
	changes := Diff(old, new, nil)
	tests := []struct {
		changes []Change
		want    string
	}{
		{nil, ""},
		{changes[:1], "stowage: bump apache/submarine:jupyter-notebook-0.7.0 to bbbbbbbbbbbb"},
		{changes[2:3], "stowage: drop quay.io/prometheus/node-exporter:v1.0.0 from the lock"},
		{changes[3:4], "stowage: lock registry.lab.internal/stowage-helper:v1 at 222222222222"},
		{changes[:2], "stowage: bump 2 image digests"},
		{changes, "stowage: update 4 lock entries (2 new digests)"},
	}
	for _, tc := range tests {
		if got := Title(tc.changes); got != tc.want {
			t.Errorf("Title(%d changes) = %q, want %q", len(tc.changes), got, tc.want)
		}
	}
}

// TestBranch: the same change set, in any order, gives the same branch;
// another change set another.
func TestBranch(t *testing.T) {
	t.Parallel()
	old, new := locks()
	changes := Diff(old, new, nil)
	b := Branch(changes)
	if !strings.HasPrefix(b, BranchPrefix) || len(b) != len(BranchPrefix)+12 {
		t.Fatalf("Branch = %q", b)
	}
	reversed := []Change{changes[3], changes[2], changes[1], changes[0]}
	if got := Branch(reversed); got != b {
		t.Errorf("Branch of the same changes in another order = %q, want %q", got, b)
	}
	if got := Branch(changes[:3]); got == b {
		t.Errorf("Branch of fewer changes = %q, the same as all of them", got)
	}
	if Branch(nil) != "" {
		t.Errorf("Branch(nil) = %q, want empty", Branch(nil))
	}
}

// TestBodyEscapesFreeText: a platform the registry wrote (were it to pass
// the lock's checks) with markdown, a mention, a pipe and a newline stays
// inside one code span of its cell: no heading, link or mention, the row
// one row of six cells.
func TestBodyEscapesFreeText(t *testing.T) {
	t.Parallel()
	const hostile = "linux/amd64 [x](https://evil.example) @admin | `tick`\n# heading"
	old := lock.Entry{Name: "r.example/app:1", Reference: "r.example/app:1", Digest: digest('a'), Kind: lock.KindManifest, Size: 1}
	new := lock.Entry{Name: "r.example/app:1", Reference: "r.example/app:1", Digest: digest('b'), Kind: lock.KindIndex,
		Platforms: []lock.Platform{{Platform: hostile, Digest: digest('c'), Size: 1}}}
	body := Body([]Change{{Key: old.Name, Old: &old, New: &new}}, BodyOptions{})
	want := "index (``linux/amd64 [x](https://evil.example) @admin \\| `tick`\\n# heading``)"
	if !strings.Contains(body, want) {
		t.Errorf("body does not hold %q:\n%s", want, body)
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "#") {
			t.Errorf("the body has a heading line %q", line)
		}
		if strings.HasPrefix(line, "| `r.example/app`") && strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") != 7 {
			t.Errorf("the row is not six cells: %q", line)
		}
	}
}

// stale words StaleEntries as lock --check prints them, one
// StaleEntry.String a line.
func stale(old, next *lock.Lock, missing, images []*plan.Image, data []byte) []string {
	var lines []string
	for _, s := range StaleEntries(old, next, missing, images, data) {
		lines = append(lines, s.String())
	}
	return lines
}

// TestStale words what `stowage lock` would change: images the lock lacks,
// entries nothing uses, a recorded spelling that differs, and a file that
// is only out of canonical form.
func TestStale(t *testing.T) {
	t.Parallel()
	images := images(t, "config")
	old, _ := locks()
	// The entry recorded another spelling of the image.
	e, _ := old.Lookup("docker.io/apache/submarine:jupyter-notebook-0.7.0")
	e.Reference = "docker.io/apache/submarine:jupyter-notebook-0.7.0"
	old.Put(e)
	next := &lock.Lock{}
	var missing []*plan.Image
	for _, img := range images {
		e, ok := old.Lookup(img.Key)
		if !ok {
			missing = append(missing, img)
			continue
		}
		e.Reference = img.Ref.Written
		next.Put(e)
	}
	got := stale(old, next, missing, images, old.Marshal())
	want := []string{
		"changed  docker.io/apache/submarine:jupyter-notebook-0.7.0 (recorded as docker.io/apache/submarine:jupyter-notebook-0.7.0, written as apache/submarine:jupyter-notebook-0.7.0)",
		"missing  docker.io/apache/submarine:jupyter-notebook-0.7.0-chinese (docker.io/apache/submarine:jupyter-notebook-0.7.0-chinese)",
		"missing  docker.io/library/busybox:1.31.1 (docker.io/library/busybox:1.31.1@sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb)",
		"unused   quay.io/prometheus/node-exporter:v1.0.0",
		"missing  registry.lab.internal/stowage-helper:v1 (registry.lab.internal/stowage-helper:v1)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Stale =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The same entries in another form: only the format line.
	same := stale(next, next, nil, images, append([]byte("# hand-edited\n"), next.Marshal()...))
	if !reflect.DeepEqual(same, []string{"format   the file is not in canonical form"}) {
		t.Errorf("Stale of a non-canonical file = %q", same)
	}
	if up := stale(next, next, nil, images, next.Marshal()); len(up) != 0 {
		t.Errorf("Stale of an up-to-date lock = %q", up)
	}
	if got, want := Summary(Diff(old, next, images), len(next.Entries)), "0 added, 1 removed, 1 changed (3 images)"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if got, want := Summary(nil, 1), "up to date (1 image)"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

// TestBodySigners: when an entry records a signer the body has a Signer
// column; a digest moved under the same key shows that key, another key
// and a signer lost (pinned unverified) are flagged in the cell and in a
// note, and the JSON report carries both sides.
func TestBodySigners(t *testing.T) {
	t.Parallel()
	entry := func(name string, d byte, s *lock.Signer) *lock.Entry {
		return &lock.Entry{Name: name, Reference: name, Digest: digest(d), Kind: lock.KindManifest, Size: 1, VerifiedBy: s}
	}
	keyA := &lock.Signer{Key: digest('a'), Signature: digest('1')}
	keyA2 := &lock.Signer{Key: digest('a'), Signature: digest('2')}
	keyB := &lock.Signer{Key: digest('b'), Signature: digest('3')}
	changes := []Change{
		{Key: "r.example/same:1", Old: entry("r.example/same:1", 'c', keyA), New: entry("r.example/same:1", 'd', keyA2)},
		{Key: "r.example/other:1", Old: entry("r.example/other:1", 'c', keyA), New: entry("r.example/other:1", 'e', keyB)},
		{Key: "r.example/lost:1", Old: entry("r.example/lost:1", 'c', keyA), New: entry("r.example/lost:1", 'f', nil)},
	}
	body := Body(changes, BodyOptions{})
	for _, want := range []string{
		"| Image | Tag | Digest | Kind | Signer | Used as | Pullers |\n",
		"| `r.example/same` | `1` | `cccccccccccc` → `dddddddddddd` | manifest | `key aaaaaaaaaaaa` |",
		"| `key aaaaaaaaaaaa` → `key bbbbbbbbbbbb` ⚠ |",
		"| `key aaaaaaaaaaaa` → `unverified` ⚠ |",
		"- `r.example/other:1`: signed by another signer than before (`key aaaaaaaaaaaa` → `key bbbbbbbbbbbb`) ⚠; check that the publisher changed its key or identity.\n",
		"- `r.example/lost:1`: verified before (`key aaaaaaaaaaaa`), the new digest is pinned unverified ⚠ (the verify policy is optional).\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "`r.example/same:1`: signed by another") {
		t.Errorf("the same key is flagged:\n%s", body)
	}
	r := NewReport(changes, BodyOptions{})
	if c := r.Changes[1]; c.OldSigner != "key aaaaaaaaaaaa" || c.NewSigner != "key bbbbbbbbbbbb" || !c.SignerChanged || r.Changes[0].SignerChanged {
		t.Errorf("report changes %+v", r.Changes)
	}
	kl := &lock.Signer{Identity: "https://github.com/o/a/.github/workflows/r.yml@refs/tags/v1", Issuer: "https://token.actions.githubusercontent.com", Signature: digest('4')}
	if got, want := SignerText(kl), "https://github.com/o/a/.github/workflows/r.yml@refs/tags/v1 (https://token.actions.githubusercontent.com)"; got != want {
		t.Errorf("SignerText = %q, want %q", got, want)
	}
}
