package imageset

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/imageref"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name byte for byte, or rewrites it
// with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestFromListGolden(t *testing.T) {
	t.Parallel()
	set, err := ReadList("testdata/kubespray-images.list")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Formats {
		b, err := Encode(set, f, "kubespray-images.list")
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "kubespray-images."+f, b)
	}
}

func TestNamesStableUnderOrder(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/kubespray-images.list")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	slices.Reverse(lines)
	a, err := ParseList("a", data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseList("b", []byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("reversed list gives another set:\n%v\n%v", a, b)
	}
}

func TestCollisionsResolved(t *testing.T) {
	t.Parallel()
	set, err := ParseList("l", []byte(`quay.io/metallb/controller:v0.13.9
registry.k8s.io/ingress-nginx/controller:v1.10.1
registry.k8s.io/pause:3.9
registry.k8s.io/pause:3.8
example.com/pause:3.9
nginx:1.27
docker.io/library/nginx:1.27
index.docker.io/library/nginx:1.27
registry.example:5000/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Set{
		{Name: "b", Reference: "registry.example:5000/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{Name: "example-com-pause-3-9", Reference: "example.com/pause:3.9"},
		{Name: "ingress-nginx-controller", Reference: "registry.k8s.io/ingress-nginx/controller:v1.10.1"},
		{Name: "metallb-controller", Reference: "quay.io/metallb/controller:v0.13.9"},
		{Name: "nginx", Reference: "docker.io/library/nginx:1.27"},
		{Name: "registry-k8s-io-pause-3-8", Reference: "registry.k8s.io/pause:3.8"},
		{Name: "registry-k8s-io-pause-3-9", Reference: "registry.k8s.io/pause:3.9"},
	}
	if !reflect.DeepEqual(set, want) {
		t.Errorf("got\n%v\nwant\n%v", set, want)
	}
}

func TestSuffixWhenLevelsCollide(t *testing.T) {
	t.Parallel()
	// "a-b/c" and "a/b-c" sanitise alike once their groups ("c", "b-c")
	// need the whole path.
	var refs []imageref.Ref
	for _, s := range []string{"example.com/a-b/c:1", "example.com/x/c:1", "example.com/a/b-c:1", "example.com/y/b-c:1"} {
		r, err := imageref.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
	}
	set, err := Build(refs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, im := range set {
		names = append(names, im.Name)
	}
	if want := []string{"a-b-c", "a-b-c-2", "x-c", "y-b-c"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
}

func TestBadReferenceNamesFileLine(t *testing.T) {
	t.Parallel()
	_, err := ReadList("testdata/bad.list")
	if err == nil {
		t.Fatal("no error")
	}
	if !strings.HasPrefix(err.Error(), `testdata/bad.list:4: image "registry.k8s.io/Pause:3.9": `) {
		t.Errorf("error %q does not name testdata/bad.list:4 and the image", err)
	}
}

func TestEmptyAndOversizedLists(t *testing.T) {
	t.Parallel()
	if _, err := ParseList("e.list", []byte("# nothing\n\n")); err == nil || !strings.Contains(err.Error(), "e.list: no image references") {
		t.Errorf("empty list: %v", err)
	}
	p := filepath.Join(t.TempDir(), "big.list")
	if err := os.WriteFile(p, bytes.Repeat([]byte("busybox:1\n"), MaxListBytes/10+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadList(p); err == nil || !strings.Contains(err.Error(), "larger than 4194304 bytes") {
		t.Errorf("oversized list: %v", err)
	}
	if _, err := ReadList(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
}

func TestCommentKeepsOneLine(t *testing.T) {
	t.Parallel()
	set := Set{{Name: "a", Reference: "busybox:1"}}
	b, err := Encode(set, "yaml", "evil\n\x1b[31mname")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# Images from evil??[31mname, written by stowage images.\n") {
		t.Errorf("got %q", b)
	}
}
