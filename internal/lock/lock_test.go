package lock

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
)

const (
	hexA = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
	hexB = "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"
	hexC = "2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6"
	hexD = "18ac3e7343f016890c510e93f935261169d9e3f565436429830faf0934f4f8e4"
)

func canonical(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "canonical.lock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	data := canonical(t)
	l, err := Parse(data, "canonical.lock.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := l.Marshal(); !bytes.Equal(got, data) {
		t.Errorf("Marshal(Parse(file)) differs from file:\n--- got\n%s\n--- want\n%s", got, data)
	}
	again, err := Parse(l.Marshal(), "again")
	if err != nil {
		t.Fatalf("Parse(Marshal): %v", err)
	}
	if !reflect.DeepEqual(again, l) {
		t.Errorf("Parse(Marshal(l)) = %+v, want %+v", again, l)
	}
	e, ok := l.Lookup("docker.io/library/busybox:1.31.1")
	if !ok {
		t.Fatal("Lookup(busybox) not found")
	}
	want := Entry{
		Name:      "docker.io/library/busybox:1.31.1",
		Reference: "busybox:1.31.1",
		Digest:    "sha256:" + hexA,
		Kind:      KindIndex,
		Platforms: []Platform{
			{Platform: "linux/amd64", Digest: "sha256:" + hexB, Size: 764619},
			{Platform: "linux/arm64/v8", Digest: "sha256:" + hexC, Size: 1002126},
		},
	}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("Lookup(busybox) = %+v, want %+v", e, want)
	}
}

func TestMarshalEmpty(t *testing.T) {
	t.Parallel()
	want := `apiVersion: stowage.dev/v1alpha1
kind: ImageLock
metadata:
  name: stowage-lock
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  images: []
`
	for _, l := range []*Lock{nil, {}} {
		if got := string(l.Marshal()); got != want {
			t.Errorf("Marshal(%v) =\n%s\nwant\n%s", l, got, want)
		}
		if _, err := Parse([]byte(want), "empty"); err != nil {
			t.Errorf("Parse(empty lock): %v", err)
		}
	}
}

// TestCanonicalOrder puts the same entries (and platforms) in every order
// and expects the same bytes.
func TestCanonicalOrder(t *testing.T) {
	t.Parallel()
	l, err := Parse(canonical(t), "canonical.lock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := l.Marshal()
	entries := l.Entries
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}, {1, 3, 0, 2}} {
		var got Lock
		for _, i := range order {
			e := entries[i]
			if len(e.Platforms) == 2 && order[0]%2 == 1 {
				e.Platforms = []Platform{e.Platforms[1], e.Platforms[0]}
			}
			got.Put(e)
		}
		if b := got.Marshal(); !bytes.Equal(b, want) {
			t.Errorf("order %v: Marshal =\n%s\nwant\n%s", order, b, want)
		}
		// Marshal sorts even when Entries was filled directly.
		direct := Lock{}
		for _, i := range order {
			direct.Entries = append(direct.Entries, entries[i])
		}
		if b := direct.Marshal(); !bytes.Equal(b, want) {
			t.Errorf("order %v, direct: Marshal =\n%s\nwant\n%s", order, b, want)
		}
	}
}

func TestPutReplaces(t *testing.T) {
	t.Parallel()
	var l Lock
	e := Entry{Name: "docker.io/library/busybox:1.31.1", Reference: "busybox:1.31.1", Digest: "sha256:" + hexA, Kind: KindManifest}
	l.Put(e)
	e.Digest = "sha256:" + hexB
	l.Put(e)
	if len(l.Entries) != 1 {
		t.Fatalf("len(Entries) = %d, want 1", len(l.Entries))
	}
	if got, _ := l.Lookup(e.Name); got.Digest != e.Digest {
		t.Errorf("after replace, Digest = %s, want %s", got.Digest, e.Digest)
	}
}

// TestNewIsPuts checks that New of entries in any order, names repeated,
// is the lock successive Puts leave: sorted, platforms sorted, the last
// entry of a name kept.
func TestNewIsPuts(t *testing.T) {
	t.Parallel()
	l, err := Parse(canonical(t), "canonical.lock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var in []Entry
	for _, i := range []int{2, 0, 3, 1, 0, 3} {
		e := l.Entries[i]
		if len(e.Platforms) == 2 {
			e.Platforms = []Platform{e.Platforms[1], e.Platforms[0]}
		}
		in = append(in, e)
	}
	in[4].Digest = "sha256:" + hexD // the second entry of Entries[0]'s name, which Put keeps
	before := slices.Clone(in)
	var want Lock
	for _, e := range in {
		want.Put(e)
	}
	got := New(in)
	if !reflect.DeepEqual(got.Entries, want.Entries) {
		t.Errorf("New =\n%+v\nwant (Puts)\n%+v", got.Entries, want.Entries)
	}
	if e, _ := got.Lookup(l.Entries[0].Name); e.Digest != "sha256:"+hexD {
		t.Errorf("New kept digest %s of %s, want the later sha256:%s", e.Digest, e.Name, hexD)
	}
	if !reflect.DeepEqual(in, before) {
		t.Error("New changed its argument")
	}
	if got := New(nil); len(got.Entries) != 0 {
		t.Errorf("New(nil) has %d entries", len(got.Entries))
	}
}

func TestReadMissing(t *testing.T) {
	t.Parallel()
	_, err := Read(filepath.Join(t.TempDir(), FileName))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(missing) error = %v, want fs.ErrNotExist", err)
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, canonical(t), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Read(path)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(l.Entries) != 4 {
		t.Errorf("len(Entries) = %d, want 4", len(l.Entries))
	}
	// Errors name the path Read was given.
	if err := os.WriteFile(path, []byte("apiVersion: v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), path+":1:") {
		t.Errorf("Read(bad) error = %v, want it to start with %s:1:", err, path)
	}
}

// header is the object around spec.images; the first entry starts on line 9.
const header = `apiVersion: stowage.dev/v1alpha1
kind: ImageLock
metadata:
  name: stowage-lock
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  images:
`

const busybox = `  - name: docker.io/library/busybox:1.31.1
    reference: busybox:1.31.1
    digest: sha256:` + hexA + `
    kind: manifest
`

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		data  string
		index int    // spec.images index, -1 outside entries
		image string // entry named by the error
		field string
		line  int
		msg   string // substring of the message
	}{
		{
			name: "bad digest hex", index: 0, image: "docker.io/library/busybox:1.31.1", field: "digest", line: 11, msg: "non-hex",
			data: header + strings.Replace(busybox, hexA, "zz"+hexA[2:], 1),
		},
		{
			name: "digest too short", index: 0, image: "docker.io/library/busybox:1.31.1", field: "digest", line: 11, msg: "wrong number of hex digits",
			data: header + strings.Replace(busybox, hexA, hexA[:60], 1),
		},
		{
			name: "digest without algorithm", index: 0, image: "docker.io/library/busybox:1.31.1", field: "digest", line: 11, msg: "cannot parse hash",
			data: header + strings.Replace(busybox, "sha256:"+hexA, hexA, 1),
		},
		{
			name: "digest not sha256", index: 0, image: "docker.io/library/busybox:1.31.1", field: "digest", line: 11, msg: "want sha256",
			data: header + strings.Replace(busybox, "sha256:"+hexA, "sha512:"+hexA+hexA, 1),
		},
		{
			name: "missing digest", index: 0, image: "docker.io/library/busybox:1.31.1", field: "digest", line: 9, msg: "required",
			data: header + strings.Replace(busybox, "    digest: sha256:"+hexA+"\n", "", 1),
		},
		{
			name: "unknown kind", index: 0, image: "docker.io/library/busybox:1.31.1", field: "kind", line: 12, msg: `unknown kind "image"`,
			data: header + strings.Replace(busybox, "kind: manifest", "kind: image", 1),
		},
		{
			name: "missing kind", index: 0, image: "docker.io/library/busybox:1.31.1", field: "kind", line: 9, msg: "required",
			data: header + strings.Replace(busybox, "    kind: manifest\n", "", 1),
		},
		{
			name: "unknown entry field", index: 0, image: "docker.io/library/busybox:1.31.1", field: "tag", line: 13, msg: "tag: field not allowed (allowed here: digest, kind, name, platform, platforms, reference, size, verifiedBy)",
			data: header + busybox + "    tag: latest\n",
		},
		{
			name: "repeated entry field", index: 0, image: "docker.io/library/busybox:1.31.1", field: "digest", line: 13, msg: `digest: duplicate key "digest": this mapping gives it at line 11 and again at line 13; a key appears once in a mapping (keep one)`,
			data: header + busybox + "    digest: sha256:" + hexB + "\n",
		},
		{
			name: "verifiedBy key not a digest", index: 0, image: "docker.io/library/busybox:1.31.1", field: "verifiedBy.key", line: 14, msg: "non-hex",
			data: header + busybox + "    verifiedBy:\n      key: sha256:zz" + hexA[2:] + "\n      signature: sha256:" + hexB + "\n",
		},
		{
			name: "verifiedBy without signature", index: 0, image: "docker.io/library/busybox:1.31.1", field: "verifiedBy.signature", line: 13, msg: "required",
			data: header + busybox + "    verifiedBy:\n      key: sha256:" + hexA + "\n",
		},
		{
			name: "verifiedBy key and identity", index: 0, image: "docker.io/library/busybox:1.31.1", field: "verifiedBy", line: 13, msg: "either key or identity with issuer",
			data: header + busybox + "    verifiedBy:\n      key: sha256:" + hexA + "\n      identity: a@example.com\n      issuer: https://issuer.example\n      signature: sha256:" + hexB + "\n",
		},
		{
			name: "verifiedBy identity without issuer", index: 0, image: "docker.io/library/busybox:1.31.1", field: "verifiedBy", line: 13, msg: "needs a key fingerprint, or a keyless identity and issuer",
			data: header + busybox + "    verifiedBy:\n      identity: a@example.com\n      signature: sha256:" + hexB + "\n",
		},
		{
			name: "verifiedBy format unknown", index: 0, image: "docker.io/library/busybox:1.31.1", field: "verifiedBy.format", line: 16, msg: `"notary" is not a signature format`,
			data: header + busybox + "    verifiedBy:\n      key: sha256:" + hexA + "\n      signature: sha256:" + hexB + "\n      format: notary\n",
		},
		{
			name: "wrong object kind", index: -1, field: "kind", line: 2, msg: `got "Lock", want "ImageLock"`,
			data: strings.Replace(header, "kind: ImageLock", "kind: Lock", 1) + busybox,
		},
		{
			name: "wrong apiVersion", index: -1, field: "apiVersion", line: 1, msg: `want "stowage.dev/v1alpha1"`,
			data: strings.Replace(header, "stowage.dev/v1alpha1", "stowage.dev/v1", 1) + busybox,
		},
		{
			name: "unknown top-level field", index: -1, field: "status", line: 10, msg: "test.lock.yaml:10: status: field not allowed (allowed here: apiVersion, kind, metadata, spec)",
			data: header + "    []\nstatus: {}\n",
		},
		{
			name: "unknown metadata field", index: -1, field: "metadata.uid", line: 4, msg: "metadata.uid: field not allowed (allowed here: annotations, labels, name, namespace)",
			data: strings.Replace(header, "  name: stowage-lock", "  uid: abc", 1) + busybox,
		},
		{
			name: "missing spec", index: -1, field: "spec", line: 1, msg: "required field missing",
			data: "apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\n",
		},
		{
			name: "images not a list", index: -1, field: "spec.images", line: 8, msg: "spec.images: a string where a list is expected",
			data: strings.TrimSuffix(header, "\n") + " busybox\n",
		},
		{
			name: "entry not a mapping", index: 0, field: "", line: 9, msg: "spec.images[0]: a string where a mapping is expected",
			data: header + "  - busybox:1.31.1\n",
		},
		{
			name: "duplicate name", index: 1, image: "docker.io/library/busybox:1.31.1", field: "name", line: 13, msg: "duplicate name, first used by spec.images[0] on line 9",
			data: header + busybox + strings.Replace(busybox, "reference: busybox:1.31.1", "reference: docker.io/library/busybox:1.31.1", 1),
		},
		{
			name: "name not normalised", index: 0, image: "busybox:1.31.1", field: "name", line: 9, msg: `want "docker.io/library/busybox:1.31.1"`,
			data: header + strings.Replace(busybox, "name: docker.io/library/busybox:1.31.1", "name: busybox:1.31.1", 1),
		},
		{
			name: "bad reference", index: 0, image: "docker.io/library/busybox:1.31.1", field: "reference", line: 10, msg: "URL scheme",
			data: header + strings.Replace(busybox, "reference: busybox:1.31.1", "reference: https://busybox:1.31.1", 1),
		},
		{
			name: "name null", index: 0, image: "busybox:1.31.1", field: "name", line: 9, msg: "required",
			data: header + strings.Replace(busybox, "name: docker.io/library/busybox:1.31.1", "name: null", 1),
		},
		{
			name: "size not a number", index: 0, image: "docker.io/library/busybox:1.31.1", field: "size", line: 13, msg: "size: a string where an integer is expected",
			data: header + busybox + "    size: \"12\"\n",
		},
		{
			name: "negative size", index: 0, image: "docker.io/library/busybox:1.31.1", field: "size", line: 13, msg: "negative",
			data: header + busybox + "    size: -1\n",
		},
		{
			name: "platforms on a manifest", index: 0, image: "docker.io/library/busybox:1.31.1", field: "platforms", line: 13, msg: "only an index lists its children",
			data: header + busybox + "    platforms:\n    - platform: linux/amd64\n      digest: sha256:" + hexB + "\n",
		},
		{
			name: "size on an index", index: 0, image: "docker.io/library/busybox:1.31.1", field: "size", line: 13, msg: "sizes are per platform",
			data: header + strings.Replace(busybox, "kind: manifest", "kind: index", 1) + "    size: 12\n",
		},
		{
			name: "platform without arch", index: 0, image: "docker.io/library/busybox:1.31.1", field: "platforms[0].platform", line: 14, msg: "want os/arch",
			data: header + strings.Replace(busybox, "kind: manifest", "kind: index", 1) + "    platforms:\n    - platform: linux\n      digest: sha256:" + hexB + "\n",
		},
		{
			name: "platform not canonical", index: 0, image: "docker.io/library/busybox:1.31.1", field: "platforms[0].platform", line: 14, msg: `want "linux/arm64"`,
			data: header + strings.Replace(busybox, "kind: manifest", "kind: index", 1) + "    platforms:\n    - platform: linux/arm64/\n      digest: sha256:" + hexB + "\n",
		},
		{
			name: "platform os with an escape", index: 0, image: "docker.io/library/busybox:1.31.1", field: "platforms[0].platform", line: 14, msg: "its os",
			data: header + strings.Replace(busybox, "kind: manifest", "kind: index", 1) + "    platforms:\n    - platform: \"linux\\x1b[31m/amd64\"\n      digest: sha256:" + hexB + "\n",
		},
		{
			name: "platform architecture with markdown", index: 0, image: "docker.io/library/busybox:1.31.1", field: "platforms[0].platform", line: 14, msg: "its architecture",
			data: header + strings.Replace(busybox, "kind: manifest", "kind: index", 1) + "    platforms:\n    - platform: linux/amd64](https://evil.example)\n      digest: sha256:" + hexB + "\n",
		},
		{
			name: "platform variant with a space", index: 0, image: "docker.io/library/busybox:1.31.1", field: "platforms[0].platform", line: 14, msg: "its variant",
			data: header + strings.Replace(busybox, "kind: manifest", "kind: index", 1) + "    platforms:\n    - platform: linux/arm64/v8 @admin\n      digest: sha256:" + hexB + "\n",
		},
		{
			name: "platform os.version with a newline", index: 0, image: "docker.io/library/busybox:1.31.1", field: "platforms[0].platform", line: 14, msg: "its os.version",
			data: header + strings.Replace(busybox, "kind: manifest", "kind: index", 1) + "    platforms:\n    - platform: \"windows/amd64:10.0\\n# x\"\n      digest: sha256:" + hexB + "\n",
		},
		{
			name: "duplicate platform", index: 0, image: "docker.io/library/busybox:1.31.1", field: "platforms[1].platform", line: 16, msg: "duplicate platform",
			data: header + strings.Replace(busybox, "kind: manifest", "kind: index", 1) + "    platforms:\n    - platform: linux/amd64\n      digest: sha256:" + hexB + "\n    - platform: linux/amd64\n      digest: sha256:" + hexC + "\n",
		},
		{
			name: "bad platform digest", index: 0, image: "docker.io/library/busybox:1.31.1", field: "platforms[0].digest", line: 15, msg: "invalid digest",
			data: header + strings.Replace(busybox, "kind: manifest", "kind: index", 1) + "    platforms:\n    - platform: linux/amd64\n      digest: sha256:abc\n",
		},
		{
			name: "unknown platform field", index: 0, image: "docker.io/library/busybox:1.31.1", field: "platforms[0].variant", line: 16, msg: "platforms[0].variant: field not allowed (allowed here: digest, platform, size)",
			data: header + strings.Replace(busybox, "kind: manifest", "kind: index", 1) + "    platforms:\n    - platform: linux/amd64\n      digest: sha256:" + hexB + "\n      variant: v8\n",
		},
		{
			name: "unknown field misspelt", index: 0, image: "docker.io/library/busybox:1.31.1", field: "digests", line: 13, msg: `digests: field not allowed; did you mean "digest"?`,
			data: header + busybox + "    digests: []\n",
		},
		{
			name: "stray top-level key with a flow list", index: -1, field: "x", line: 13, msg: "test.lock.yaml:13: x: field not allowed (allowed here: apiVersion, kind, metadata, spec)",
			data: header + busybox + "x: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n",
		},
		{
			name: "stray top-level key with a flow mapping", index: -1, field: "x", line: 13, msg: "x: field not allowed",
			data: header + busybox + "x: {a: 1}\n",
		},
		{
			name: "size a flow list", index: 0, image: "docker.io/library/busybox:1.31.1", field: "size", line: 13, msg: "size: a list where an integer is expected",
			data: header + busybox + "    size: [1]\n",
		},
		{
			name: "platforms a flow mapping", index: 0, image: "docker.io/library/busybox:1.31.1", field: "platforms", line: 13, msg: "platforms: a mapping where a list is expected",
			data: header + strings.Replace(busybox, "kind: manifest", "kind: index", 1) + "    platforms: {linux: 1}\n",
		},
		{
			name: "verifiedBy a flow list", index: 0, image: "docker.io/library/busybox:1.31.1", field: "verifiedBy", line: 13, msg: "verifiedBy: a list where a mapping is expected",
			data: header + busybox + "    verifiedBy: [1]\n",
		},
		{
			name: "kind a list", index: 0, image: "docker.io/library/busybox:1.31.1", field: "kind", line: 12, msg: "kind: a list where a string is expected",
			data: header + strings.Replace(busybox, "kind: manifest", "kind: [manifest]", 1),
		},
		{
			name: "apiVersion a flow list", index: -1, field: "apiVersion", line: 1, msg: "test.lock.yaml:1: apiVersion: a list where a string is expected",
			data: strings.Replace(header, "apiVersion: stowage.dev/v1alpha1", "apiVersion: [1]", 1) + busybox,
		},
		{
			name: "annotations a list", index: -1, field: "metadata.annotations", line: 5, msg: "metadata.annotations: a list where a mapping is expected",
			data: strings.Replace(header, "  annotations:\n    config.kubernetes.io/local-config: \"true\"\n", "  annotations: [a]\n", 1) + busybox,
		},
		{
			name: "empty file", index: -1, msg: "empty file",
			data: "",
		},
		{
			name: "null document", index: -1, line: 1, msg: "not an ImageLock object",
			data: "~\n",
		},
		{
			name: "document marker only", index: -1, line: 2, msg: "not an ImageLock object",
			data: "---\n",
		},
		{
			name: "tagged null", index: -1, line: 1, msg: "not an ImageLock object",
			data: "!!null\n",
		},
		{
			name: "a list", index: -1, line: 2, msg: "not an ImageLock object",
			data: "# a list\n- a\n",
		},
		{
			name: "two documents", index: -1, line: 3, msg: "more than one YAML document",
			data: "apiVersion: stowage.dev/v1alpha1\n---\nkind: ImageLock\n",
		},
		{
			name: "YAML syntax", index: -1, line: 2, msg: "test.lock.yaml:2: mapping values are not allowed in this context",
			data: "apiVersion: stowage.dev/v1alpha1\n  kind: [\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data), "test.lock.yaml")
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			var found *Error
			for _, e := range flatten(err) {
				var le *Error
				if errors.As(e, &le) && le.Index == tc.index && le.Field == tc.field && le.Line == tc.line {
					found = le
					break
				}
			}
			if found == nil {
				t.Fatalf("no error at index %d, field %q, line %d; got:\n%v", tc.index, tc.field, tc.line, err)
			}
			if found.File != "test.lock.yaml" {
				t.Errorf("File = %q, want test.lock.yaml", found.File)
			}
			if found.Image != tc.image {
				t.Errorf("Image = %q, want %q", found.Image, tc.image)
			}
			if !strings.Contains(found.Error(), tc.msg) {
				t.Errorf("message %q does not contain %q", found.Error(), tc.msg)
			}
			if !strings.HasPrefix(found.Error(), "test.lock.yaml:") {
				t.Errorf("message %q does not start with the file name", found.Error())
			}
			if tc.index >= 0 && !strings.Contains(found.Error(), "spec.images[") {
				t.Errorf("message %q does not name the entry index", found.Error())
			}
		})
	}
}

// TestParseErrorMessage pins the whole shape of one message.
func TestParseErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(header+strings.Replace(busybox, "kind: manifest", "kind: image", 1)), "stowage.lock.yaml")
	want := `stowage.lock.yaml:12: spec.images[0] (docker.io/library/busybox:1.31.1): kind: unknown kind "image"; want "index" or "manifest"`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

func TestParseReportsAllProblems(t *testing.T) {
	t.Parallel()
	data := header + strings.Replace(busybox, "kind: manifest", "kind: image", 1) + strings.Replace(busybox, hexA, "00", 1)
	_, err := Parse([]byte(data), "x")
	if n := len(flatten(err)); n != 3 { // unknown kind; bad digest; duplicate name
		t.Errorf("got %d errors, want 3:\n%v", n, err)
	}
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	good := Entry{Name: "docker.io/library/busybox:1.31.1", Reference: "busybox:1.31.1", Digest: "sha256:" + hexA, Kind: KindManifest, Size: 10}
	if err := Validate(good); err != nil {
		t.Errorf("Validate(good) = %v", err)
	}
	bad := good
	bad.Digest = "sha256:nope"
	err := Validate(bad)
	var le *Error
	if !errors.As(err, &le) || le.Field != "digest" || le.Image != good.Name {
		t.Errorf("Validate(bad digest) = %v, want an *Error on field digest naming the image", err)
	}
}

func TestDigestFor(t *testing.T) {
	t.Parallel()
	index := Entry{
		Name: "docker.io/library/busybox:1.31.1", Reference: "busybox:1.31.1", Digest: "sha256:" + hexA, Kind: KindIndex,
		Platforms: []Platform{
			{Platform: "linux/amd64", Digest: "sha256:" + hexB},
			{Platform: "linux/arm64/v8", Digest: "sha256:" + hexC},
		},
	}
	arm := index
	arm.Platforms = []Platform{
		{Platform: "linux/arm/v6", Digest: "sha256:" + hexB},
		{Platform: "linux/arm/v7", Digest: "sha256:" + hexC},
		{Platform: "linux/arm64", Digest: "sha256:" + hexD},
		{Platform: "linux/arm64/v8", Digest: "sha256:" + hexA},
	}
	manifest := Entry{Name: "ghcr.io/example-org/tool:2", Reference: "ghcr.io/example-org/tool:2", Digest: "sha256:" + hexD, Kind: KindManifest}
	amd := manifest
	amd.Platform = "linux/amd64"
	armv8 := manifest
	armv8.Platform = "linux/arm64/v8"
	tests := []struct {
		name     string
		entry    Entry
		platform string
		want     string
		wantErr  error  // errors.Is target, nil for any error
		msg      string // substring of the error, "" when no error
	}{
		{name: "no platform pins the index", entry: index, want: "sha256:" + hexA},
		{name: "no platform pins a manifest", entry: manifest, want: "sha256:" + hexD},
		{name: "exact", entry: index, platform: "linux/amd64", want: "sha256:" + hexB},
		{name: "exact with variant", entry: index, platform: "linux/arm64/v8", want: "sha256:" + hexC},
		{name: "request without variant matches recorded variant", entry: index, platform: "linux/arm64", want: "sha256:" + hexC},
		{name: "exact wins over variant match", entry: arm, platform: "linux/arm64", want: "sha256:" + hexD},
		{name: "request with variant does not match recorded without", entry: Entry{Name: "n", Kind: KindIndex, Platforms: []Platform{{Platform: "linux/arm64", Digest: "sha256:" + hexD}}}, platform: "linux/arm64/v8", wantErr: ErrNoPlatform, msg: "available: linux/arm64"},
		{name: "missing names image and platforms", entry: index, platform: "linux/ppc64le", wantErr: ErrNoPlatform, msg: "busybox:1.31.1 (docker.io/library/busybox:1.31.1): no platform linux/ppc64le (available: linux/amd64, linux/arm64/v8)"},
		{name: "wrong variant", entry: index, platform: "linux/arm64/v9", wantErr: ErrNoPlatform, msg: "no platform linux/arm64/v9"},
		{name: "ambiguous variants", entry: arm, platform: "linux/arm", msg: "ambiguous (matches linux/arm/v6, linux/arm/v7)"},
		{name: "manifest has no children", entry: manifest, platform: "linux/amd64", wantErr: ErrNoPlatform, msg: "ghcr.io/example-org/tool:2: platform linux/amd64 requested, but the image is a single manifest"},
		{name: "platform without arch", entry: index, platform: "linux", msg: "want os/arch"},
		{name: "manifest of the platform pins itself", entry: amd, platform: "linux/amd64", want: "sha256:" + hexD},
		{name: "manifest with variant matches request without", entry: armv8, platform: "linux/arm64", want: "sha256:" + hexD},
		{name: "manifest of another platform", entry: amd, platform: "linux/arm64", wantErr: ErrNoPlatform, msg: "is a single manifest for linux/amd64 (available: linux/amd64)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DigestFor(tc.entry, tc.platform)
			if tc.msg == "" {
				if err != nil || got != tc.want {
					t.Errorf("DigestFor(%q) = %q, %v; want %q", tc.platform, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("DigestFor(%q) = %q, want an error", tc.platform, got)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("DigestFor(%q) error %v is not %v", tc.platform, err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("DigestFor(%q) error %q does not contain %q", tc.platform, err, tc.msg)
			}
		})
	}
}

// TestParseOtherObject: a Deployment given as the lock is named by its
// apiVersion and kind alone, on their lines; its own fields (spec.replicas)
// would bury that under messages about the lock's Go types.
func TestParseOtherObject(t *testing.T) {
	t.Parallel()
	data := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: 1\n"
	_, err := Parse([]byte(data), "stowage.lock.yaml")
	want := "stowage.lock.yaml:1: apiVersion: got \"apps/v1\", want \"" + APIVersion + "\"\n" +
		"stowage.lock.yaml:2: kind: got \"Deployment\", want \"ImageLock\""
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestVerifiedByRoundTrip: an entry's signer, a key or a keyless identity,
// is written after the entry's other fields and read back the same.
func TestVerifiedByRoundTrip(t *testing.T) {
	t.Parallel()
	l := &Lock{}
	l.Put(Entry{Name: "ghcr.io/o/a:1", Reference: "ghcr.io/o/a:1", Digest: "sha256:" + hexA, Kind: KindManifest, Size: 10,
		VerifiedBy: &Signer{Key: "sha256:" + hexB, Signature: "sha256:" + hexC, Format: v1alpha1.SignatureTag}})
	l.Put(Entry{Name: "ghcr.io/o/b:1", Reference: "ghcr.io/o/b:1", Digest: "sha256:" + hexD, Kind: KindManifest,
		VerifiedBy: &Signer{Identity: "https://github.com/o/b/.github/workflows/release.yml@refs/tags/v1", Issuer: "https://token.actions.githubusercontent.com", Signature: "sha256:" + hexC, Format: v1alpha1.SignatureBundle}})
	// A lock written before the format was recorded reads as it was.
	l.Put(Entry{Name: "ghcr.io/o/c:1", Reference: "ghcr.io/o/c:1", Digest: "sha256:" + hexD, Kind: KindManifest,
		VerifiedBy: &Signer{Key: "sha256:" + hexB, Signature: "sha256:" + hexC}})
	data := l.Marshal()
	want := "    size: 10\n    verifiedBy:\n      key: sha256:" + hexB + "\n      signature: sha256:" + hexC + "\n      format: sig\n"
	if !bytes.Contains(data, []byte(want)) {
		t.Errorf("Marshal lacks\n%s\n%s", want, data)
	}
	got, err := Parse(data, "v.lock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, l) {
		t.Errorf("Parse(Marshal(l)) = %+v, want %+v", got, l)
	}
}

// TestParseObject: the object of a lock file with the metadata kustomize
// may add (namespace, labels) kept, the entries those of Parse, sorted;
// a file Parse refuses is refused with the same error.
func TestParseObject(t *testing.T) {
	data := []byte("apiVersion: stowage.dev/v1alpha1\nkind: ImageLock\nmetadata:\n  name: stowage-lock\n  namespace: prod\n  labels: {team: gpu}\nspec:\n  images:\n" +
		"  - {name: docker.io/library/nginx:1, reference: nginx:1, digest: sha256:" + hexB + ", kind: manifest}\n" +
		"  - {name: docker.io/library/busybox:1, reference: busybox:1, digest: sha256:" + hexA + ", kind: manifest}\n")
	o, err := ParseObject(data, "x.lock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := Parse(data, "x.lock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if o.APIVersion != APIVersion || o.Kind != ObjectKind || o.Metadata.Namespace != "prod" || o.Metadata.Labels["team"] != "gpu" || !reflect.DeepEqual(o.Spec.Images, l.Entries) {
		t.Errorf("ParseObject = %+v; want the file's metadata and Parse's entries %+v", o, l.Entries)
	}
	bad := append(bytes.Clone(data), "extra: 1\n"...)
	_, perr := Parse(bad, "x.lock.yaml")
	if _, err := ParseObject(bad, "x.lock.yaml"); err == nil || perr == nil || err.Error() != perr.Error() {
		t.Errorf("ParseObject of a file with an unknown field: %v; want Parse's %v", err, perr)
	}
}
