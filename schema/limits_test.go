package schema

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// manyFiles is a valid config of n YAML files, each one environment, and
// a CUE file with a profile pulling them all; one is the same content as a
// single YAML file.
func manyFiles(n int) (many, one []File) {
	var all strings.Builder
	var names []string
	for i := range n {
		body := fmt.Sprintf("environments:\n  e%04d:\n    image: registry.example/team/app-%04d:1.0\n", i, i)
		many = append(many, File{Name: fmt.Sprintf("cfg/env-%04d.yaml", i), Data: []byte(body)})
		if i == 0 {
			all.WriteString("environments:\n")
		}
		fmt.Fprintf(&all, "  e%04d:\n    image: registry.example/team/app-%04d:1.0\n", i, i)
		names = append(names, fmt.Sprintf("%q", fmt.Sprintf("e%04d", i)))
	}
	profile := File{Name: "cfg/site.cue", Data: []byte("package stowage\nprofiles: p: pullers: [{name: \"pre\", namespace: \"ns\", environments: [" + strings.Join(names, ", ") + "]}]\n")}
	many = append(many, profile)
	one = []File{{Name: "cfg/all.yaml", Data: []byte(all.String())}, profile}
	return many, one
}

// TestManyFilesOneBuild: 2,000 config files load into the same config as
// one file of the same content (BenchmarkManyFiles times both).
func TestManyFilesOneBuild(t *testing.T) {
	many, one := manyFiles(2000)
	a, err := LoadFiles("cfg", many, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadFiles("cfg", one, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Environments) != 2000 || len(b.Environments) != 2000 || a.Environments["e1999"].Image != b.Environments["e1999"].Image {
		t.Errorf("environments: %d from 2,000 files, %d from one", len(a.Environments), len(b.Environments))
	}
}

// BenchmarkManyFiles: a 2,000-file config beside one file of the same
// total size; the goal is about the same time (issue 14: 51 s and 1.35 GB
// when files were unified one at a time).
func BenchmarkManyFiles(b *testing.B) {
	many, one := manyFiles(2000)
	for _, bc := range []struct {
		name  string
		files []File
	}{{"2000-files", many}, {"one-file", one}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := LoadFiles("cfg", bc.files, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLimits: a config past each limit is refused with an error naming
// the file, the limit and the flag that raises it; a config cannot raise
// a limit.
func TestLimits(t *testing.T) {
	many, _ := manyFiles(50)

	_, err := LoadFiles("cfg", many, WithLimits(Limits{Nodes: 500}))
	if err == nil || !strings.Contains(err.Error(), "syntax nodes by this file, the limit of a config; raise it with --max-config-nodes") || !strings.HasPrefix(err.Error(), "cfg/") {
		t.Errorf("node limit: %v", err)
	}

	// The bomb takes seconds and hundreds of MB to finish, not minutes and
	// gigabytes: an abandoned evaluation runs on in the test process.
	bomb := []File{{Name: "cfg/bomb.cue", Data: []byte("package stowage\n_n: [for a in list.Range(0, 500, 1) for b in list.Range(0, 500, 1) {a*b}]\nimages: x: reference: \"busybox:\\(len(_n))\"\n")}}
	bomb[0].Data = []byte(strings.Replace(string(bomb[0].Data), "package stowage\n", "package stowage\nimport \"list\"\n", 1))
	start := time.Now()
	_, err = LoadFiles("cfg", bomb, WithLimits(Limits{Time: 200 * time.Millisecond}))
	if err == nil || !strings.Contains(err.Error(), "cfg/bomb.cue: evaluating the config took more than 200ms, the limit of a config; raise it with --config-timeout") {
		t.Errorf("time limit: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the load returned after %v", d)
	}

	start = time.Now()
	_, err = LoadFiles("cfg", bomb, WithLimits(Limits{Memory: 32 << 20}))
	if err == nil || !strings.Contains(err.Error(), "cfg/bomb.cue: evaluating the config took more than 33554432 bytes of memory, the limit of a config; raise it with --max-config-memory") {
		t.Errorf("memory limit: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the load returned after %v", d)
	}

	dir := t.TempDir()
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.yaml", i)), []byte(strings.Repeat("# padding\n", 30)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = ReadDir(dir, WithLimits(Limits{Bytes: 1000}))
	want := filepath.Join(dir, "f3.yaml") + ": the config files hold more than 1000 bytes together by this file, the limit of a config; raise it with --max-config-bytes"
	if err == nil || err.Error() != want {
		t.Errorf("byte limit: %v\nwant %s", err, want)
	}
}

// TestEncodingOneRule: a byte order mark is dropped alike from .json,
// .yaml and .cue files; bytes that are not UTF-8 are one error naming the
// file once, with the line and column, whatever the kind of file.
func TestEncodingOneRule(t *testing.T) {
	_, one := manyFiles(1)
	bom := "\xef\xbb\xbf"
	for _, f := range []File{
		{Name: "cfg/x.json", Data: []byte(bom + `{"images": {"z": {"reference": "busybox:1"}}}`)},
		{Name: "cfg/x.yaml", Data: []byte(bom + "images: {z: {reference: \"busybox:1\"}}\n")},
		{Name: "cfg/x.cue", Data: []byte(bom + "package stowage\nimages: z: reference: \"busybox:1\"\n")},
	} {
		cfg, err := LoadFiles("cfg", append([]File{f}, one...), Options{})
		if err != nil || cfg.Images["z"].Reference != "busybox:1" {
			t.Errorf("%s with a BOM: %v", f.Name, err)
		}
	}
	for _, f := range []File{
		{Name: "cfg/x.json", Data: []byte("{\"images\":\n {\"z\": {\"reference\": \"caf\xe9:1\"}}}")},
		{Name: "cfg/x.yaml", Data: []byte("images:\n  z: {reference: \"caf\xe9:1\"}\n")},
		{Name: "cfg/x.cue", Data: []byte("package stowage\nimages: z: reference: \"caf\xe9:1\"\n")},
	} {
		_, err := LoadFiles("cfg", append([]File{f}, one...), Options{})
		want := f.Name + ":2:"
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), ": not valid UTF-8") || strings.Count(err.Error(), f.Name) != 1 {
			t.Errorf("%s not UTF-8: %v; want one error starting %q", f.Name, err, want)
		}
	}
}

// TestWithContext: a load whose context is done stops at once, with an
// error at the first file wrapping the context's cause; one cancelled
// while CUE evaluates, in this process or in a child, returns soon after
// the cancel, long before the evaluation would end.
func TestWithContext(t *testing.T) {
	cause := errors.New("interrupted")
	done, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	files := []File{{Name: "cfg/c.yaml", Data: []byte("images: {a: {reference: busybox:1.36}}\n")}}
	if _, err := LoadFiles("cfg", files, WithContext(done)); !errors.Is(err, cause) || !strings.HasPrefix(err.Error(), "cfg/c.yaml: evaluating the config stopped: interrupted") {
		t.Errorf("LoadFiles: %v, want the cause at the first file", err)
	}
	if _, err := LoadEmbedded("cfg", "fc.yaml", []byte("spec: {}\n"), "spec", nil, WithContext(done)); !errors.Is(err, cause) {
		t.Errorf("LoadEmbedded: %v, want the cause", err)
	}

	bomb := []File{{Name: "cfg/bomb.cue", Data: []byte("package stowage\nimport \"list\"\n_n: [for a in list.Range(0, 500, 1) for b in list.Range(0, 500, 1) {a*b}]\nimages: x: reference: \"busybox:\\(len(_n))\"\n")}}
	for name, opts := range map[string][]Option{"in process": nil, "child": {child(t)}} {
		ctx, stop := context.WithCancelCause(context.Background())
		time.AfterFunc(50*time.Millisecond, func() { stop(cause) })
		start := time.Now()
		_, err := LoadFiles("cfg", bomb, append(opts, WithContext(ctx))...)
		if !errors.Is(err, cause) || !strings.HasPrefix(err.Error(), "cfg/bomb.cue: evaluating the config stopped: interrupted") {
			t.Errorf("%s: cancelled evaluation: %v, want the cause", name, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: the load returned %v after its start, the cancel came at 50ms", name, d)
		}
	}
}
