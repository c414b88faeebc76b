package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
)

// compiledJSONSchema is JSONSchema compiled by an independent validator
// (santhosh-tekuri/jsonschema, draft 2020-12).
func compiledJSONSchema(t *testing.T) *jsv.Schema {
	t.Helper()
	b, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsv.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsv.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(JSONSchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(JSONSchemaID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// patternConfig is a valid config with edit applied: images app and
// base, environments jupyter, a profile p with a puller, a keyless verify
// policy and an admission policy.
func patternConfig(edit func(m map[string]any)) map[string]any {
	m := map[string]any{
		"images": map[string]any{
			"app":  map[string]any{"reference": "busybox:1.36", "auth": map[string]any{"secret": "hub-pull"}},
			"base": map[string]any{"reference": "registry.example.org:5000/team/base:v1.2"},
		},
		"environments": map[string]any{"jupyter": map[string]any{"image": "docker.io/jupyter/base-notebook@sha256:" + strings.Repeat("a", 64)}},
		"verify": map[string]any{
			"identities":  []any{map[string]any{"identity": "release@example.org", "issuer": "https://issuer.example.org"}},
			"trustedRoot": "trusted_root.json",
		},
		"profiles": map[string]any{"p": map[string]any{
			"namespace": "prepull",
			"policy":    map[string]any{"kinds": []any{"policy-controller"}, "name": "site-policy"},
			"pullers": []any{map[string]any{
				"name": "pre", "namespace": "prepull", "tenants": []any{"team-a"},
				"priorityClassName": "high.priority", "recordsName": "pre-records",
				"images": []any{"app", "base"}, "environments": []any{"jupyter"},
			}},
		}},
	}
	if edit != nil {
		edit(m)
	}
	return m
}

func puller(m map[string]any) map[string]any {
	return m["profiles"].(map[string]any)["p"].(map[string]any)["pullers"].([]any)[0].(map[string]any)
}

// TestJSONSchemaPatterns: for each string rule Load checks in Go that the
// JSON Schema states as a pattern (patterns), a value Load refuses is
// refused by the JSON Schema at that field too, and the valid config,
// with values of each rule's every shape, is accepted by both.
func TestJSONSchemaPatterns(t *testing.T) {
	s := compiledJSONSchema(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "trusted_root.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, m map[string]any) (loadErr, schemaErr error) {
		t.Helper()
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		_, loadErr = LoadFiles(dir, []File{{Name: filepath.Join(dir, "stowage.yaml"), Data: b}})
		inst, err := jsv.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return loadErr, s.Validate(inst)
	}
	if l, j := check(t, patternConfig(nil)); l != nil || j != nil {
		t.Fatalf("the valid config: Load %v; JSON Schema %v", l, j)
	}
	setRef := func(ref string) func(map[string]any) {
		return func(m map[string]any) {
			m["images"].(map[string]any)["app"].(map[string]any)["reference"] = ref
		}
	}
	setPuller := func(k string, v any) func(map[string]any) {
		return func(m map[string]any) { puller(m)[k] = v }
	}
	// The valid shapes of each rule, accepted by both.
	for name, edit := range map[string]func(map[string]any){
		"reference with a registry port, a tag and a digest": setRef("registry.example.org:5000/a/b-c__d.e:V1_x.2-3@sha256:" + strings.Repeat("0", 64)),
		"reference at localhost":                             setRef("localhost/app:1"),
		"reference with a registry host and port only":       setRef("registry:5000/app"),
		"reference of one component":                         setRef("busybox"),
		"reference with a sha512 digest":                     setRef("busybox@sha512:" + strings.Repeat("f", 128)),
		"puller name of 50 characters":                       setPuller("name", strings.Repeat("a", 50)),
		"subdomain of one label":                             setPuller("priorityClassName", "high"),
		"node disk in binary units":                          setPuller("nodeDisk", map[string]any{"size": "200Gi", "imageGCHighThresholdPercent": 100}),
		"node disk with an exponent":                         setPuller("nodeDisk", map[string]any{"size": "1.5e12"}),
		"image name with spaces and unicode": func(m map[string]any) {
			m["images"].(map[string]any)["my app é"] = map[string]any{"reference": "busybox:1"}
		},
	} {
		t.Run("valid "+name, func(t *testing.T) {
			if l, j := check(t, patternConfig(edit)); l != nil || j != nil {
				t.Errorf("Load %v; JSON Schema %v", l, j)
			}
		})
	}
	setPolicyName := func(v string) func(map[string]any) {
		return func(m map[string]any) {
			m["profiles"].(map[string]any)["p"].(map[string]any)["policy"].(map[string]any)["name"] = v
		}
	}
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		at   string // the JSON pointer the JSON Schema names, or its words for a map key
	}{
		{"reference in upper case", setRef("Busybox:1.36"), "/images/app/reference"},
		{"reference with a scheme", setRef("https://registry.example.org/app"), "/images/app/reference"},
		{"reference with white space", setRef("busy box"), "/images/app/reference"},
		{"reference with an empty component", setRef("registry.example.org//app"), "/images/app/reference"},
		{"reference with a tag starting with '-'", setRef("busybox:-1"), "/images/app/reference"},
		{"reference with a tag of 129 characters", setRef("busybox:" + strings.Repeat("a", 129)), "/images/app/reference"},
		{"reference with a short digest", setRef("busybox@sha256:abc"), "/images/app/reference"},
		{"reference with the digest after ':'", setRef("busybox:sha256:" + strings.Repeat("a", 64)), "/images/app/reference"},
		{"reference with two '@'", setRef("busybox@sha256:" + strings.Repeat("a", 64) + "@x"), "/images/app/reference"},
		{"environment image with a control character", func(m map[string]any) {
			m["environments"].(map[string]any)["jupyter"].(map[string]any)["image"] = "jupyter/base\x1b[31m"
		}, "/environments/jupyter/image"},
		{"puller name in upper case", setPuller("name", "Pre"), "/profiles/p/pullers/0/name"},
		{"puller name of 51 characters", setPuller("name", strings.Repeat("a", 51)), "/profiles/p/pullers/0/name"},
		{"puller name with a dot", setPuller("name", "pre.1"), "/profiles/p/pullers/0/name"},
		{"puller namespace ending in '-'", setPuller("namespace", "prepull-"), "/profiles/p/pullers/0/namespace"},
		{"tenant not a label", setPuller("tenants", []any{"Team_A"}), "/profiles/p/pullers/0/tenants/0"},
		{"priorityClassName with '_'", setPuller("priorityClassName", "high_priority"), "/profiles/p/pullers/0/priorityClassName"},
		{"recordsName starting with '-'", setPuller("recordsName", "-records"), "/profiles/p/pullers/0/recordsName"},
		{"node disk size with a space", setPuller("nodeDisk", map[string]any{"size": "200 Gi"}), "/profiles/p/pullers/0/nodeDisk/size"},
		{"node disk size negative", setPuller("nodeDisk", map[string]any{"size": "-5Gi"}), "/profiles/p/pullers/0/nodeDisk/size"},
		{"node disk size in lower-case binary units", setPuller("nodeDisk", map[string]any{"size": "5gi"}), "/profiles/p/pullers/0/nodeDisk/size"},
		{"profile namespace in upper case", func(m map[string]any) { m["profiles"].(map[string]any)["p"].(map[string]any)["namespace"] = "Prepull" }, "/profiles/p/namespace"},
		{"auth secret with '_'", func(m map[string]any) {
			m["images"].(map[string]any)["app"].(map[string]any)["auth"] = map[string]any{"secret": "hub_pull"}
		}, "/images/app/auth/secret"},
		{"admission policy name of 41 characters", setPolicyName(strings.Repeat("a", 41)), "/profiles/p/policy/name"},
		{"admission policy name with '.'", setPolicyName("site.policy"), "/profiles/p/policy/name"},
		{"keyless identity with a right-to-left override", func(m map[string]any) {
			m["verify"].(map[string]any)["identities"].([]any)[0].(map[string]any)["identity"] = "release@exa\u202emple.org"
		}, "/verify/identities/0/identity"},
		{"keyless issuer with a newline", func(m map[string]any) {
			m["verify"].(map[string]any)["identities"].([]any)[0].(map[string]any)["issuer"] = "https://issuer.example.org\nforged"
		}, "/verify/identities/0/issuer"},
		{"image name with a control character", func(m map[string]any) {
			imgs := m["images"].(map[string]any)
			imgs["ap\x07p"] = imgs["app"]
			delete(imgs, "app")
			puller(m)["images"] = []any{"ap\x07p", "base"}
		}, "invalid propertyName"},
		{"environment name with a zero-width space", func(m map[string]any) {
			envs := m["environments"].(map[string]any)
			envs["jup\u200byter"] = envs["jupyter"]
			delete(envs, "jupyter")
			puller(m)["environments"] = []any{"jup\u200byter"}
		}, "invalid propertyName"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, j := check(t, patternConfig(c.edit))
			if l == nil {
				t.Fatal("Load accepts it: the case tests nothing")
			}
			if j == nil {
				t.Fatalf("Load refuses it (%v), the JSON Schema accepts it", l)
			}
			if !strings.Contains(j.Error(), "'"+c.at+"'") && !strings.Contains(j.Error(), c.at+" ") {
				t.Errorf("the JSON Schema refuses it elsewhere than %s:\n%v", c.at, j)
			}
		})
	}
}
