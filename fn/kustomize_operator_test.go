package fn_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/internal/testing/testbin"
)

// TestKustomizeOperatorInputCap: through the real kustomize, an exec
// declaration raising --max-input-bytes to 100 MB does not raise the
// operator's STOWAGE_MAX_INPUT_BYTES (2000 here, below the example's
// ResourceList): the build fails naming the operator's limit; and a
// declaration whose envs set the variable is refused.
func TestKustomizeOperatorInputCap(t *testing.T) {
	kustomize := testbin.Kustomize(t)
	path := stowagePath(t)
	declared := func(decl string) string {
		return copyEdited(t, "../examples/gitops-argo/prepull", func(name string, b []byte) []byte {
			if name != "stowage.yaml" {
				return b
			}
			return bytes.Replace(b, []byte("        args: [fn]\n"), []byte(decl), 1)
		})
	}
	run := func(dir string, operator ...string) string {
		cmd := exec.Command(kustomize, append([]string{"build"}, append(execFlags, dir)...)...)
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "STOWAGE_") && !strings.HasPrefix(e, "PATH=") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Env = append(cmd.Env, append([]string{"PATH=" + path}, operator...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil {
			return ""
		}
		return stderr.String()
	}
	raised := declared("        args: [fn, --max-input-bytes, \"100000000\"]\n")
	if stderr := run(raised); stderr != "" {
		t.Fatalf("kustomize build without the operator's cap: %s", stderr)
	}
	if stderr := run(raised, fn.MaxInputVariable+"=2000"); !strings.Contains(stderr, "larger than 2000 bytes, the operator's limit") {
		t.Errorf("kustomize build with the operator's cap 2000 and the declaration's 100 MB:\n%s", stderr)
	}
	envs := declared("        args: [fn]\n        envs: [STOWAGE_MAX_MEMORY=100000000000]\n")
	if stderr := run(envs); !strings.Contains(stderr, "the function declaration sets STOWAGE_MAX_MEMORY in its envs") {
		t.Errorf("kustomize build of a declaration setting STOWAGE_MAX_MEMORY:\n%s", stderr)
	}
}
