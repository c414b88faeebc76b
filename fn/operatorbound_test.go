package fn

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/testing/testbin"
)

// bigResourceList is runInput with n ConfigMaps of about 100 bytes each
// appended to its items.
func bigResourceList(n int) string {
	var b strings.Builder
	b.WriteString(runInput) // its items come last
	for i := range n {
		fmt.Fprintf(&b, "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: filler-%07d, namespace: default}\n  data: {k: v}\n", i)
	}
	return b.String()
}

// TestOperatorCapsInput: the operator's STOWAGE_MAX_INPUT_BYTES caps the
// ResourceList whatever the exec declaration's --max-input-bytes says (a
// repository raising it to 100 MB gets the operator's 20 kB), the
// declaration may lower it, and a bad value of the variable is refused
// naming it. Before, --max-input-bytes alone decided.
func TestOperatorCapsInput(t *testing.T) {
	t.Parallel()
	in := bigResourceList(300) // about 30 kB
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"the repository raises", map[string]string{MaxInputVariable: "20000"}, []string{"--max-input-bytes", "100000000"},
			"the ResourceList on stdin is larger than 20000 bytes, the operator's limit of stowage fn (STOWAGE_MAX_INPUT_BYTES, default 4194304); the exec declaration's --max-input-bytes may lower it, never raise it"},
		{"the repository lowers", map[string]string{MaxInputVariable: "100000000"}, []string{"--max-input-bytes", "5000"},
			"the ResourceList on stdin is larger than 5000 bytes, the limit of stowage fn; raise it with --max-input-bytes"},
		{"a bad value", map[string]string{MaxInputVariable: "lots"}, nil, `STOWAGE_MAX_INPUT_BYTES="lots": want a positive number of bytes`},
		{"a bad memory value", map[string]string{MaxMemoryVariable: "-1"}, nil, `STOWAGE_MAX_MEMORY="-1": want a positive number of bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			cmd := NewCommand(WithGetenv(getenv))
			var out, errb bytes.Buffer
			cmd.SetIn(strings.NewReader(in))
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant %q", err, tc.want)
			}
		})
	}
}

// TestDeclaredEnvOperatorVariables: a function declaration whose envs set
// any of the operator's variables is refused naming it.
func TestDeclaredEnvOperatorVariables(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"STOWAGE_ALLOW_ENV", MaxInputVariable, MaxMemoryVariable} {
		fc := yaml.MustParse(`apiVersion: stowage.dev/v1alpha1
kind: Stowage
metadata:
  name: s
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: stowage
        args: [fn]
        envs: [` + v + `=1000000000]
`)
		if err := DeclaredEnv(fc); err == nil || !strings.Contains(err.Error(), "sets "+v+" in its envs") {
			t.Errorf("envs set %s: %v", v, err)
		}
	}
}

// TestFnMemoryBound: with STOWAGE_MAX_MEMORY at 48 MiB and the input cap
// raised by the operator, the stowage binary's fn reading a 3 MB
// ResourceList (which kyaml holds as hundreds of MB of nodes) ends with
// exit 1 and one line naming the limit and the variable, whatever the
// input bound; under the default memory bound the same input is read.
func TestFnMemoryBound(t *testing.T) {
	t.Parallel()
	bin := testbin.Stowage(t)
	in := bigResourceList(30000)
	run := func(env ...string) (string, int) {
		cmd := exec.Command(bin, "fn", "--max-input-bytes", "100000000")
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
		cmd.Stdin = strings.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stderr.String(), code
	}
	stderr, code := run(MaxInputVariable+"=100000000", MaxMemoryVariable+"=50331648")
	want := "the function took more than 50331648 bytes of memory, the operator's limit (STOWAGE_MAX_MEMORY, default 2147483648)"
	if code != 1 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and one line saying %q", code, stderr, want)
	}
	if stderr, code := run(MaxInputVariable + "=100000000"); strings.Contains(stderr, "bytes of memory") {
		t.Errorf("under the default memory bound: exit %d\n%s", code, stderr)
	}
}
