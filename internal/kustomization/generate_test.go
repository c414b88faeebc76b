package kustomization

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestOwnExec: stowage's own function is an exec of `stowage` (or an
// absolute path to the running executable) with fn first and no envs;
// every other declaration is refused naming the file, the annotation's
// line and the field.
func TestOwnExec(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "stowage")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for decl, want := range map[string]string{
		"exec: {path: stowage, args: [fn]}":                            "",
		"exec: {path: stowage, args: [fn, --allow-env, X]}":            "",
		"exec: {path: " + exe + ", args: [fn]}":                        "",
		"exec: {path: ./stowage, args: [fn]}":                          `exec.path "./stowage" is not stowage's own executable`,
		"exec: {path: " + other + ", args: [fn]}":                      "is not stowage's own executable",
		"exec: {path: stowage, args: [render]}":                        `exec.args ["render"] do not start with fn`,
		"exec: {path: stowage}":                                        "exec.args [] do not start with fn",
		"exec: {path: stowage, args: [fn], envs: [STOWAGE_X=1]}":       "exec.envs: the function's environment is the operator's",
		"container: {image: ghcr.io/stowage/stowage:1}":                `container image "ghcr.io/stowage/stowage:1": a container function is never run here`,
		"container: {image: ghcr.io/stowage/stowage:1, network: true}": "a container function is never run here",
	} {
		src := "apiVersion: stowage.dev/v1alpha1\nkind: Stowage\nmetadata:\n  name: s\n  annotations:\n    config.kubernetes.io/function: |\n      " + decl + "\nspec: {}\n"
		fc, err := yaml.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = OwnExec(fc, "k/stowage.yaml", exe)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", decl, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "k/stowage.yaml:6: metadata.annotations.config.kubernetes.io/function: ")):
			t.Errorf("%s: %v, want k/stowage.yaml:6: … %s", decl, err, want)
		}
	}
}
