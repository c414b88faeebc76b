package fn

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runInput is a ResourceList with a Stowage functionConfig whose every
// reference carries its digest and an empty ImageLock item.
var runInput = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
functionConfig:
  apiVersion: stowage.dev/v1alpha1
  kind: Stowage
  metadata: {name: prepull}
  spec:
    profile: lab
    helper: {image: "ghcr.io/stowage/stowage-helper:v0.1.0@sha256:` + strings.Repeat("2", 64) + `"}
    images:
      app: {reference: "busybox:1.36@sha256:` + strings.Repeat("1", 64) + `"}
    profiles:
      lab:
        namespace: prepull
        pullers: [{name: tools, namespace: prepull, images: [app]}]
items:
- apiVersion: stowage.dev/v1alpha1
  kind: ImageLock
  metadata:
    name: stowage-lock
    annotations: {config.kubernetes.io/local-config: "true"}
  spec: {images: []}
`

// TestRun: Main after its child dispatch (run) takes the declaration
// written for stowage (a leading fn) and none, gives the output of
// NewCommand, and says every failure but the results on stderr, prefixed
// with its name, with exit 1, or 2 for a usage mistake; its help declares
// the binary by its own name without args.
func TestRun(t *testing.T) {
	var want bytes.Buffer
	c := NewCommand()
	c.SetIn(strings.NewReader(runInput))
	c.SetOut(&want)
	c.SetErr(new(bytes.Buffer))
	c.SetArgs(nil)
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	badLock := strings.Replace(runInput, "busybox:1.36@sha256:"+strings.Repeat("1", 64), "busybox:1.36", 1)
	cases := []struct {
		name   string
		args   []string
		in     string
		code   int
		stdout string // "" checks nothing; "=" wants NewCommand's output
		stderr string // wanted exactly; "~x" wanted to contain x
	}{
		{"fn", []string{"fn"}, runInput, 0, "=", ""},
		{"none", nil, runInput, 0, "=", ""},
		{"fn and flags", []string{"--max-input-bytes", "100000", "fn", "--config-timeout", "1m"}, runInput, 0, "=", ""},
		{"fn twice", []string{"fn", "fn"}, runInput, 2, "", "myfn: unexpected argument \"fn\": myfn takes flags and at most one argument, fn (as in a declaration written for stowage, args: [fn])\nRun 'myfn --help' for usage.\n"},
		{"other argument", []string{"render"}, runInput, 2, "", "myfn: unexpected argument \"render\": myfn takes flags and at most one argument, fn (as in a declaration written for stowage, args: [fn])\nRun 'myfn --help' for usage.\n"},
		{"unknown flag", []string{"fn", "--bogus"}, runInput, 2, "", "myfn: unknown flag: --bogus\nRun 'myfn --help' for usage.\n"},
		{"bad limit", []string{"--config-timeout", "soon"}, runInput, 2, "", "~myfn: invalid argument \"soon\" for \"--config-timeout\" flag"},
		{"malformed", []string{"fn"}, "items: [\n", 1, "", "~myfn: failed to read ResourceList input: MalformedYAMLError: yaml: "},
		{"over the bound", []string{"fn", "--max-input-bytes", "100"}, runInput, 1, "", "myfn: failed to read ResourceList input: the ResourceList on stdin is larger than 100 bytes, the limit of myfn; raise it with --max-input-bytes in the exec declaration's args\n"},
		{"control characters", []string{"--x\x1b[31m"}, runInput, 2, "", "myfn: unknown flag: --x\\x1b[31m\nRun 'myfn --help' for usage.\n"},
		{"error results", []string{"fn"}, badLock, 1, "", "~Stowage prepull: stowage.lock.yaml has no entry for 1 image; run `stowage lock` to resolve it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run("myfn", "", tc.args, strings.NewReader(tc.in), &stdout, &stderr, nil)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if tc.stdout == "=" && stdout.String() != want.String() {
				t.Errorf("stdout:\n%s\nwant NewCommand's:\n%s", stdout.String(), want.String())
			}
			if w, ok := strings.CutPrefix(tc.stderr, "~"); ok {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr:\n%s\nwant it to contain %q", stderr.String(), w)
				}
			} else if stderr.String() != tc.stderr {
				t.Errorf("stderr:\n%q\nwant:\n%q", stderr.String(), tc.stderr)
			}
			if strings.Contains(stderr.String(), "\x1b") {
				t.Errorf("stderr holds a raw escape: %q", stderr.String())
			}
		})
	}
	// The results are said once, by the function: no "myfn:" line repeats
	// them.
	var stderr bytes.Buffer
	run("myfn", "", []string{"fn"}, strings.NewReader(badLock), new(bytes.Buffer), &stderr, nil)
	if strings.Contains(stderr.String(), "myfn:") {
		t.Errorf("error results reported again:\n%s", stderr.String())
	}

	var help bytes.Buffer
	if code := run("myfn", "", []string{"--help"}, strings.NewReader(""), &help, new(bytes.Buffer), nil); code != 0 {
		t.Errorf("--help: exit %d", code)
	}
	for _, w := range []string{"      path: myfn      # looked up in $PATH; ./myfn is relative to the kustomization\n\nand build with", "Usage:\n  myfn [flags]", "--max-config-memory", "--max-input-bytes"} {
		if !strings.Contains(help.String(), w) {
			t.Errorf("--help lacks %q:\n%s", w, help.String())
		}
	}
	if strings.Contains(help.String(), "args: [fn]") || strings.Contains(help.String(), "path: stowage") {
		t.Errorf("--help declares stowage:\n%s", help.String())
	}
}

// TestRunChild: run is given an executable to evaluate configs in (Main:
// its own), here a script that notes each run, and the functionConfig,
// YAML and so data (schema.Computes), is evaluated in this process: the
// function is one process, the child's start-up saved.
func TestRunChild(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "child")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" >> '"+marker+"'\nexec '"+self+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run("myfn", script, []string{"fn"}, strings.NewReader(runInput), &stdout, &stderr, nil); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	if got, err := os.ReadFile(marker); !os.IsNotExist(err) {
		t.Errorf("the functionConfig was evaluated in a child: runs %q (%v)", got, err)
	}
	if !strings.Contains(stdout.String(), "kind: DaemonSet") {
		t.Errorf("no DaemonSet in the output:\n%s", stdout.String())
	}
}
