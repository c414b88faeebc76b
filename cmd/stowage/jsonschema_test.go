package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/stowage/stowage/schema"
)

// jsonSchemaPath is where the repository keeps the generated JSON Schema.
var jsonSchemaPath = filepath.Join(repoRoot, "docs", "stowage.schema.json")

// TestJSONSchemaCurrent: docs/stowage.schema.json is what `stowage schema
// --format jsonschema` prints (go test -run TestJSONSchemaCurrent -update
// rewrites it), and the same bytes on a second generation.
func TestJSONSchemaCurrent(t *testing.T) {
	parallelUnlessUpdate(t)
	stdout, stderr, code := runCLI(t, nil, "schema", "--format", "jsonschema")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	again, _ := schema.JSONSchema()
	if !bytes.Equal(stdout, again) {
		t.Error("two generations differ")
	}
	if *update {
		if err := os.WriteFile(jsonSchemaPath, stdout, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(readFile(t, jsonSchemaPath), stdout) {
		t.Errorf("%s is stale: go test ./cmd/stowage -run TestJSONSchemaCurrent -update", jsonSchemaPath)
	}
}

// compileJSONSchema compiles the generated schema with an independent
// validator (santhosh-tekuri/jsonschema, draft 2020-12).
func compileJSONSchema(t *testing.T) *jsv.Schema {
	t.Helper()
	b, err := schema.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsv.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsv.NewCompiler()
	if err := c.AddResource(schema.JSONSchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(schema.JSONSchemaID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validateYAML validates one YAML document against s.
func validateYAML(s *jsv.Schema, doc []byte) error {
	j, err := sigsyaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	inst, err := jsv.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// TestJSONSchemaValidatesExamples: the YAML config files of the examples,
// the Argo CD example's Stowage and the JupyterImagePuller and Stowage
// functionConfigs of the KRM function's accepted test cases validate
// against the generated schema; each names it on a yaml-language-server
// line whose relative path resolves to docs/stowage.schema.json. Broken
// documents (a misspelled field, a wrong type, an unknown kind's field)
// do not validate.
func TestJSONSchemaValidatesExamples(t *testing.T) {
	t.Parallel()
	s := compileJSONSchema(t)
	schemaLine := regexp.MustCompile(`(?m)^# yaml-language-server: \$schema=(\S+)$`)
	for _, f := range []string{
		"examples/submarine-notebooks/environments.yaml",
		"examples/openpai-offline/package-cache.yaml",
		"examples/gitops-argo/prepull/stowage.yaml",
	} {
		path := filepath.Join(repoRoot, f)
		b := readFile(t, path)
		m := schemaLine.FindSubmatch(b)
		if m == nil {
			t.Errorf("%s has no yaml-language-server $schema line", f)
		} else if got, _ := filepath.Abs(filepath.Join(filepath.Dir(path), string(m[1]))); got != mustAbs(t, jsonSchemaPath) {
			t.Errorf("%s: $schema=%s resolves to %s, not docs/stowage.schema.json", f, m[1], got)
		}
		if err := validateYAML(s, b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// The Submarine design's object as its seed writes it: the schema
	// finds the one mistake the function reports (an address hidden by a
	// web page as [email protected], which YAML reads as a list), and
	// nothing else.
	seed := readFile(t, filepath.Join(repoRoot, "fn", "testdata", "submarine-design", "jupyterimagepuller.yaml"))
	if err := validateYAML(s, seed); err == nil || !strings.Contains(err.Error(), "/spec/images/1/auth/email") {
		t.Errorf("the Submarine design's seed: %v; want the error at spec.images[1].auth.email", err)
	}
	fixed := regexp.MustCompile(`email: \[[^\]]*\]`).ReplaceAll(seed, []byte("email: someone@example.org"))
	if err := validateYAML(s, fixed); err != nil {
		t.Errorf("the Submarine design's seed with an address: %v", err)
	}
	n := 0
	for _, c := range []string{"submarine-site", "submarine-records-name", "stowage-render", "pin-only", "site-pin"} {
		path := filepath.Join(repoRoot, "fn", "testdata", c, "input.yaml")
		var rl struct {
			FunctionConfig yaml.Node `yaml:"functionConfig"`
		}
		if err := yaml.Unmarshal(readFile(t, path), &rl); err != nil || rl.FunctionConfig.Kind == 0 {
			t.Fatalf("%s: %v", path, err)
		}
		fc, err := yaml.Marshal(&rl.FunctionConfig)
		if err != nil {
			t.Fatal(err)
		}
		if err := validateYAML(s, fc); err != nil {
			t.Errorf("%s functionConfig: %v\n%s", path, err, fc)
		}
		if strings.Contains(string(fc), "kind: JupyterImagePuller") {
			n++
		}
	}
	if n == 0 {
		t.Error("no JupyterImagePuller among the functionConfigs validated")
	}
	for name, doc := range map[string]string{
		"a misspelled field":                          "enviroments:\n  jupyter:\n    image: a/b:c\n",
		"a wrong type":                                "profiles:\n  p:\n    pullers:\n      - name: x\n        namespace: 5\n        environments: [a]\n",
		"an empty reference":                          "environments:\n  jupyter:\n    image: \"\"\n",
		"a Stowage's unknown field":                   "apiVersion: stowage.dev/v1alpha1\nkind: Stowage\nspec:\n  profle: x\n",
		"a JupyterImagePuller's image without a name": "apiVersion: org.apache.submarine/v1\nkind: JupyterImagePuller\nspec:\n  images:\n    - image: a/b:c\n",
	} {
		if err := validateYAML(s, []byte(doc)); err == nil {
			t.Errorf("%s validates:\n%s", name, doc)
		}
	}
	if err := validateYAML(s, []byte("apiVersion: stowage.dev/v1alpha1\nkind: Stowage\nspec:\n  profile: x\n  environments:\n    j:\n      image: a/b:c\n")); err != nil {
		t.Errorf("a Stowage with a profile and no profiles: %v", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(fmt.Errorf("abs %s: %w", p, err))
	}
	return a
}
