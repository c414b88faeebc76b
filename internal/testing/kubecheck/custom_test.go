package kubecheck

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The admission policies of internal/admission's golden files (a Kyverno
// ClusterPolicy with key rules, policy-controller TrustRoot and
// ClusterImagePolicies, key and keyless, the CRI-O ConfigMap) pass.
func TestCheckAdmissionGolden(t *testing.T) {
	t.Parallel()
	var all strings.Builder
	for _, f := range []string{"edge.yaml", "edge-keyless.yaml", "edge-ivpol.yaml"} {
		stream := readFixture(t, "../../../admission/testdata/"+f)
		if err := CheckAll(stream); err != nil {
			t.Fatalf("CheckAll(internal/admission/testdata/%s) = %v, want nil", f, err)
		}
		all.Write(stream)
	}
	for _, kind := range []string{"kind: ClusterPolicy", "kind: ImageValidatingPolicy", "kind: TrustRoot", "kind: ClusterImagePolicy", "kind: ConfigMap"} {
		if !strings.Contains(all.String(), kind) {
			t.Errorf("the golden files have no %s: the test no longer covers it", kind)
		}
	}
}

const testKey = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEKg8HOjNVNMVRv7DTMsN5bVwTcwS2
CbiXXJP4+K0+MIzd9hlpcG24Wu2KsZGeyl6+ewPUzYdfzvST8r+h43EsvA==
-----END PUBLIC KEY-----
`

// indent indents every line of s by n spaces.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pad) + "\n"
}

func clusterPolicy(spec string) string {
	return "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: stowage-edge\nspec:\n" + indent(spec, 2)
}

var kyvernoRule = `name: verify-top-level
match:
  any:
  - resources:
      kinds: [Pod]
verifyImages:
- imageReferences: ["registry.site/app:*", "registry.site/app@*"]
  failureAction: Enforce
  attestors:
  - count: 1
    entries:
    - keys:
        publicKeys: |
` + "          " + strings.ReplaceAll(strings.TrimSuffix(testKey, "\n"), "\n", "\n          ") + "\n"

func clusterImagePolicy(spec string) string {
	return "apiVersion: policy.sigstore.dev/v1beta1\nkind: ClusterImagePolicy\nmetadata:\n  name: stowage-edge-top-level\nspec:\n" + indent(spec, 2)
}

const cipAuthority = "- name: key-0\n  key:\n    hashAlgorithm: sha256\n    data: |\n" + "      -----BEGIN PUBLIC KEY-----\n      MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEKg8HOjNVNMVRv7DTMsN5bVwTcwS2\n      CbiXXJP4+K0+MIzd9hlpcG24Wu2KsZGeyl6+ewPUzYdfzvST8r+h43EsvA==\n      -----END PUBLIC KEY-----\n"

func TestCheckCustom(t *testing.T) {
	t.Parallel()
	rules := "rules:\n" + indent("- "+strings.ReplaceAll(strings.TrimSuffix(kyvernoRule, "\n"), "\n", "\n  "), 0)
	images := "images:\n- glob: registry.site/app:*\n"
	tests := []struct {
		name  string
		doc   string
		field string // "" means valid
		typ   field.ErrorType
	}{
		{name: "Kyverno key rule", doc: clusterPolicy("background: false\nwebhookTimeoutSeconds: 30\n" + rules)},
		{name: "ClusterImagePolicy key", doc: clusterImagePolicy(images + "mode: warn\nauthorities:\n" + cipAuthority)},

		// Metadata, as the API server checks every custom resource.
		{
			name:  "cluster-scoped object with a namespace",
			doc:   strings.Replace(clusterPolicy(rules), "  name: stowage-edge\n", "  name: stowage-edge\n  namespace: default\n", 1),
			field: "metadata.namespace",
			typ:   field.ErrorTypeForbidden,
		},
		{
			name:  "name not a DNS subdomain",
			doc:   strings.Replace(clusterPolicy(rules), "name: stowage-edge\n", "name: Stowage_Edge\n", 1),
			field: "metadata.name",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "name missing",
			doc:   strings.Replace(clusterPolicy(rules), "  name: stowage-edge\n", "  labels: {a: b}\n", 1),
			field: "metadata.name",
			typ:   field.ErrorTypeRequired,
		},
		{
			name:  "label value invalid",
			doc:   strings.Replace(clusterPolicy(rules), "  name: stowage-edge\n", "  name: stowage-edge\n  labels: {stowage.dev/profile: \"a b\"}\n", 1),
			field: "metadata.labels",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "unknown metadata field",
			doc:   strings.Replace(clusterPolicy(rules), "  name: stowage-edge\n", "  name: stowage-edge\n  nmae: x\n", 1),
			field: "metadata.nmae",
			typ:   field.ErrorTypeForbidden,
		},
		{
			name:  "unknown top-level field",
			doc:   clusterPolicy(rules) + "status: {}\n",
			field: "status",
			typ:   field.ErrorTypeForbidden,
		},
		{
			name:  "spec missing",
			doc:   "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: p\n",
			field: "spec",
			typ:   field.ErrorTypeRequired,
		},

		// Kyverno.
		{
			name:  "no rules",
			doc:   clusterPolicy("rules: []\n"),
			field: "spec.rules",
			typ:   field.ErrorTypeRequired,
		},
		{
			name:  "rule name longer than 63",
			doc:   clusterPolicy(strings.Replace(rules, "verify-top-level", strings.Repeat("r", 64), 1)),
			field: "spec.rules[0].name",
			typ:   field.ErrorTypeTooLong,
		},
		{
			name:  "rule names repeat",
			doc:   clusterPolicy(rules + indent("- "+strings.ReplaceAll(strings.TrimSuffix(kyvernoRule, "\n"), "\n", "\n  "), 0)),
			field: "spec.rules[1].name",
			typ:   field.ErrorTypeDuplicate,
		},
		{
			name:  "failureAction not Enforce or Audit",
			doc:   clusterPolicy(strings.Replace(rules, "failureAction: Enforce", "failureAction: Deny", 1)),
			field: "spec.rules[0].verifyImages[0].failureAction",
			typ:   field.ErrorTypeNotSupported,
		},
		{
			name:  "webhook timeout out of range",
			doc:   clusterPolicy("webhookTimeoutSeconds: 31\n" + rules),
			field: "spec.webhookTimeoutSeconds",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "count above the entries",
			doc:   clusterPolicy(strings.Replace(rules, "count: 1", "count: 2", 1)),
			field: "spec.rules[0].verifyImages[0].attestors[0].count",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "public key that is not PEM",
			doc:   clusterPolicy(strings.Replace(rules, "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE", "MFkw", 1)),
			field: "spec.rules[0].verifyImages[0].attestors[0].entries[0].keys.publicKeys",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "private key as the public key",
			doc:   clusterPolicy(strings.ReplaceAll(rules, "PUBLIC KEY", "PRIVATE KEY")),
			field: "spec.rules[0].verifyImages[0].attestors[0].entries[0].keys.publicKeys",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "unknown spec field",
			doc:   clusterPolicy(strings.Replace(rules, "failureAction:", "failureActoin:", 1)),
			field: "spec.rules[0].verifyImages[0].failureActoin",
			typ:   field.ErrorTypeForbidden,
		},
		{
			name:  "no image references",
			doc:   clusterPolicy(strings.Replace(rules, `imageReferences: ["registry.site/app:*", "registry.site/app@*"]`, "imageReferences: []", 1)),
			field: "spec.rules[0].verifyImages[0].imageReferences",
			typ:   field.ErrorTypeRequired,
		},
		{
			name:  "count a string",
			doc:   clusterPolicy(strings.Replace(rules, "count: 1", `count: "1"`, 1)),
			field: "spec.rules[0].verifyImages[0].attestors[0].count",
			typ:   field.ErrorTypeTypeInvalid,
		},
		{
			name:  "entry with keys and keyless",
			doc:   clusterPolicy(strings.Replace(rules, "- keys:", "- keyless: {issuer: https://i, subject: a}\n"+strings.Repeat(" ", keysColumn(rules))+"  keys:", 1)),
			field: "spec.rules[0].verifyImages[0].attestors[0].entries[0]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "keyless with subject and subjectRegExp",
			doc:   clusterPolicy(rules[:strings.Index(rules, "- keys:")] + "- keyless: {issuer: https://i, subject: a, subjectRegExp: b}\n"),
			field: "spec.rules[0].verifyImages[0].attestors[0].entries[0].keyless",
			typ:   field.ErrorTypeInvalid,
		},

		// policy-controller.
		{
			name:  "no images",
			doc:   clusterImagePolicy("images: []\nauthorities:\n" + cipAuthority),
			field: "spec.images",
			typ:   field.ErrorTypeRequired,
		},
		{
			name:  "mode not enforce or warn",
			doc:   clusterImagePolicy(images + "mode: audit\nauthorities:\n" + cipAuthority),
			field: "spec.mode",
			typ:   field.ErrorTypeNotSupported,
		},
		{
			name:  "authority with key and keyless",
			doc:   clusterImagePolicy(images + "authorities:\n" + cipAuthority + "  keyless:\n    identities: [{issuer: https://i, subject: s}]\n"),
			field: "spec.authorities[0]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "hash algorithm unknown",
			doc:   clusterImagePolicy(images + "authorities:\n" + strings.Replace(cipAuthority, "sha256", "md5", 1)),
			field: "spec.authorities[0].key.hashAlgorithm",
			typ:   field.ErrorTypeNotSupported,
		},
		{
			name:  "keyless identity without issuer",
			doc:   clusterImagePolicy(images + "authorities:\n- name: keyless\n  keyless:\n    identities: [{subject: s}]\n"),
			field: "spec.authorities[0].keyless.identities[0]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "TrustRoot chain not base64",
			doc:   "apiVersion: policy.sigstore.dev/v1alpha1\nkind: TrustRoot\nmetadata:\n  name: r\nspec:\n  sigstoreKeys:\n    certificateAuthorities:\n    - uri: https://fulcio\n      certChain: '-----BEGIN'\n",
			field: "spec.sigstoreKeys.certificateAuthorities[0].certChain",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "TrustRoot without sigstoreKeys",
			doc:   "apiVersion: policy.sigstore.dev/v1alpha1\nkind: TrustRoot\nmetadata:\n  name: r\nspec:\n  remote: {mirror: https://tuf}\n",
			field: "spec.remote",
			typ:   field.ErrorTypeForbidden,
		},
		{
			name:  "ClusterImagePolicy at v1alpha1",
			doc:   strings.Replace(clusterImagePolicy(images+"authorities:\n"+cipAuthority), "v1beta1", "v1alpha1", 1),
			field: "kind",
			typ:   field.ErrorTypeNotSupported,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.doc))
			if tc.field == "" {
				if err != nil {
					t.Errorf("Check() = %v, want nil\n%s", err, tc.doc)
				}
				return
			}
			if !hasProblem(err, tc.field, tc.typ) {
				t.Errorf("Check() = %v\nwant a %s problem at %q\n%s", err, tc.typ, tc.field, tc.doc)
			}
		})
	}
}

// CheckObject takes the *unstructured.Unstructured objects render returns
// for admission policies, and checks them as documents.
func TestCheckObjectUnstructured(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc, field string
	}{
		{name: "ClusterPolicy", doc: clusterPolicy("rules:\n" + indent("- "+strings.ReplaceAll(strings.TrimSuffix(kyvernoRule, "\n"), "\n", "\n  "), 0))},
		{name: "ConfigMap", doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stowage-edge-crio\n  namespace: edge\ndata:\n  policy.json: '{}'\n"},
		{name: "ConfigMap with a bad key", doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  'a b': x\n", field: "data[a b]"},
		{name: "ClusterPolicy without rules", doc: clusterPolicy("background: false\n"), field: "spec.rules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(tc.doc), &m); err != nil {
				t.Fatal(err)
			}
			err := CheckObject(&unstructured.Unstructured{Object: m})
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("CheckObject() = %v, want nil", err)
			case tc.field != "" && !hasProblemAt(err, tc.field):
				t.Errorf("CheckObject() = %v, want a problem at %s", err, tc.field)
			}
		})
	}
}

func hasProblemAt(err error, path string) bool {
	for _, fe := range problems(err) {
		if fe.Field == path {
			return true
		}
	}
	return false
}

// keysColumn is the column of "- keys:" in s.
func keysColumn(s string) int {
	i := strings.Index(s, "- keys:")
	return i - strings.LastIndex(s[:i], "\n") - 1
}

// TestCheckImageValidatingPolicy: the golden ImageValidatingPolicy passes;
// each field the CRD constrains, changed to what it refuses, is refused at
// its path.
func TestCheckImageValidatingPolicy(t *testing.T) {
	t.Parallel()
	golden := string(readFixture(t, "../../../admission/testdata/edge-ivpol.yaml"))
	if err := Check([]byte(golden)); err != nil {
		t.Fatalf("golden: %v", err)
	}
	for _, tc := range []struct {
		name, old, new, field string
	}{
		{"action not an enum value", "  - Deny\n", "  - Block\n", "spec.validationActions[0]"},
		{"failure policy not an enum value", "failurePolicy: Fail", "failurePolicy: Never", "spec.failurePolicy"},
		{"timeout over the webhook range", "timeoutSeconds: 30", "timeoutSeconds: 31", "spec.webhookConfiguration.timeoutSeconds"},
		{"attestor without a name", "    name: key0\n", "", "spec.attestors[0].name"},
		{"key not a public key", "-----BEGIN PUBLIC KEY-----", "-----BEGIN PRIVATE KEY-----", "spec.attestors[0].cosign.key.data"},
		{"unknown cosign field", "      ctlog:\n", "      ctlgo:\n", "spec.attestors[0].cosign.ctlgo"},
		{"no validations", "  validations:\n  - expression:", "  validationz:\n  - expression:", "spec.validations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(golden, tc.old) {
				t.Fatalf("golden has no %q", tc.old)
			}
			doc := strings.Replace(golden, tc.old, tc.new, 1)
			err := Check([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("Check() = %v, want a problem at %s", err, tc.field)
			}
		})
	}
}
