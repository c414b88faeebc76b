package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartupUsage: the startup command refuses bad flags and a missing
// environment with exit 2 and a line naming what is wrong, before it
// talks to any server. (The gate itself is proven against a real
// kube-apiserver by e2e's TestStartupGate.)
func TestStartupUsage(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NODE_NAME": "n", "POD_NAMESPACE": "ns", "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "1"}
	parts := `[{"name":"a"}]`
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no gate", []string{"--self", "a", "--parts", parts}, env, "exactly one of --taint and --condition"},
		{"both gates", []string{"--self", "a", "--parts", parts, "--taint", "k", "--condition", "c"}, env, "exactly one of --taint and --condition"},
		{"bad parts", []string{"--self", "a", "--parts", "[", "--taint", "k"}, env, "--parts:"},
		{"self not a part", []string{"--self", "b", "--parts", parts, "--taint", "k"}, env, `--self "b" is not one of --parts`},
		{"zero attempts", []string{"--self", "a", "--parts", parts, "--taint", "k", "--attempts", "0"}, env, "must be positive"},
		{"no node", []string{"--self", "a", "--parts", parts, "--taint", "k"}, map[string]string{}, "NODE_NAME, POD_NAMESPACE"},
		{"no CA", []string{"--self", "a", "--parts", parts, "--taint", "k", "--serviceaccount-dir", filepath.Join(dir, "none")}, env, "ca.crt"},
		{"bad CA", []string{"--self", "a", "--parts", parts, "--taint", "k", "--serviceaccount-dir", dir}, env, "holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			_, err := parseStartup(tc.args, func(k string) string { return tc.env[k] }, &out, &errb)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseStartup(%q) = %v, want an error with %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestSelects: a part runs on a node when the node has every label of the
// part's selector, with the same value.
func TestSelects(t *testing.T) {
	node := map[string]string{"kubernetes.io/os": "linux", "gpu": "true", "kernel": "5.15"}
	for _, tc := range []struct {
		sel  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{"gpu": "true"}, true},
		{map[string]string{"gpu": "true", "kernel": "5.15"}, true},
		{map[string]string{"kernel": "6.8"}, false},
		{map[string]string{"zone": "a"}, false},
		{map[string]string{"gpu": ""}, false},
	} {
		if got := selects(tc.sel, node); got != tc.want {
			t.Errorf("selects(%v) = %v, want %v", tc.sel, got, tc.want)
		}
	}
}
