package admissiontest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	policiesv1 "github.com/kyverno/api/api/policies.kyverno.io/v1"
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	pcv1alpha1 "github.com/sigstore/policy-controller/pkg/apis/policy/v1alpha1"
	pcv1beta1 "github.com/sigstore/policy-controller/pkg/apis/policy/v1beta1"
	_ "go.podman.io/image/v5/docker" // registers the docker transport, as in CRI-O
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/signature"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/stowage/stowage/internal/admission"
)

// checked holds what the projects' own types read from the rendered
// admission objects, each object decoded strictly and validated.
type checked struct {
	// Kyverno are the kyverno.io/v1 ClusterPolicies.
	Kyverno []*kyvernov1.ClusterPolicy
	// IVPols are the policies.kyverno.io/v1 ImageValidatingPolicies.
	IVPols []*policiesv1.ImageValidatingPolicy
	// CIPs are the policy.sigstore.dev/v1beta1 ClusterImagePolicies.
	CIPs []*pcv1beta1.ClusterImagePolicy
	// Roots are the policy.sigstore.dev/v1alpha1 TrustRoots by name.
	Roots map[string]*pcv1alpha1.TrustRoot
	// CRIO are the CRI-O fragments: the ConfigMap, the policy
	// containers-image parsed, and that policy as containers-image
	// marshals it back (its own reading of every field).
	CRIO []crioFragment
}

type crioFragment struct {
	ConfigMap *corev1.ConfigMap
	Policy    *signature.Policy
	Parsed    crioPolicy
}

// crioPolicy is the JSON form of a signature.Policy that the fragments
// use: a default and the docker transport's scopes.
type crioPolicy struct {
	Default    []map[string]any                     `json:"default"`
	Transports map[string]map[string][]crioSigstore `json:"transports"`
}

type crioSigstore struct {
	Type               string   `json:"type"`
	KeyData            []byte   `json:"keyData"`
	KeyDatas           [][]byte `json:"keyDatas"`
	RekorPublicKeyData []byte   `json:"rekorPublicKeyData"`
	Fulcio             *struct {
		CAData       []byte `json:"caData"`
		OIDCIssuer   string `json:"oidcIssuer"`
		SubjectEmail string `json:"subjectEmail"`
	} `json:"fulcio"`
	SignedIdentity struct {
		Type             string `json:"type"`
		DockerRepository string `json:"dockerRepository"`
	} `json:"signedIdentity"`
}

// strict decodes the JSON b into v as the API server decodes a request
// body with field validation Strict (sigs.k8s.io/json: case-sensitive,
// unknown and duplicate fields refused), then refuses anything after the
// object.
func strict(b []byte, v any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(b, v, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		return errors.Join(strictErrs...)
	}
	return nil
}

// isAdmission reports whether an object of this apiVersion and kind is one
// the checks read: the Kyverno and policy-controller kinds, and a
// ConfigMap holding a CRI-O fragment.
func isAdmission(apiVersion, kind string, data map[string]any) bool {
	switch {
	case apiVersion == "kyverno.io/v1" && kind == "ClusterPolicy",
		apiVersion == "policies.kyverno.io/v1" && kind == "ImageValidatingPolicy",
		strings.HasPrefix(apiVersion, "policy.sigstore.dev/") && (kind == "ClusterImagePolicy" || kind == "TrustRoot"):
		return true
	case apiVersion == "v1" && kind == "ConfigMap":
		_, ok := data[admission.CRIOKey]
		return ok && len(data) == 1
	}
	return false
}

// check decodes each object (JSON) with the project's own type, runs its
// validation and returns what was read; an object of another kind is an
// error, as is any decode or validation failure (naming the object).
func check(objs [][]byte) (*checked, error) {
	c := &checked{Roots: map[string]*pcv1alpha1.TrustRoot{}}
	ctx := context.Background()
	for _, b := range objs {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(b, &tm); err != nil {
			return nil, err
		}
		what := fmt.Sprintf("%s %s %s", tm.APIVersion, tm.Kind, tm.Metadata.Name)
		switch {
		case tm.APIVersion == "kyverno.io/v1" && tm.Kind == "ClusterPolicy":
			var p kyvernov1.ClusterPolicy
			if err := strict(b, &p); err != nil {
				return nil, fmt.Errorf("%s: kyverno's types: %w", what, err)
			}
			warnings, errs := p.Validate(sets.New[string]())
			if len(errs) > 0 {
				return nil, fmt.Errorf("%s: kyverno's Validate: %w", what, errs.ToAggregate())
			}
			if len(warnings) > 0 {
				return nil, fmt.Errorf("%s: kyverno's Validate warns: %s", what, strings.Join(warnings, "; "))
			}
			// The verifyImages step of kyverno's admission validation
			// (pkg/validation/policy.Validate, not imported: it needs a
			// cluster client and pulls in the whole engine), as it runs it:
			// each ImageVerification's Validate, audit per its own
			// failureAction, else the spec's.
			for i, r := range p.Spec.Rules {
				for j, iv := range r.VerifyImages {
					audit := p.Spec.ValidationFailureAction.Audit()
					if iv.FailureAction != nil {
						audit = iv.FailureAction.Audit()
					}
					path := field.NewPath("spec").Child("rules").Index(i).Child("verifyImages").Index(j)
					if errs := iv.Validate(audit, path); len(errs) > 0 {
						return nil, fmt.Errorf("%s: kyverno's ImageVerification.Validate: %w", what, errs.ToAggregate())
					}
				}
			}
			c.Kyverno = append(c.Kyverno, &p)
		case tm.APIVersion == "policies.kyverno.io/v1" && tm.Kind == "ImageValidatingPolicy":
			// Kyverno's own types (github.com/kyverno/api, the version
			// kyverno v1.19.1 requires), decoded strictly. Kyverno checks
			// an ImageValidatingPolicy by compiling its CEL
			// (pkg/image/verification/evaluator), which pulls in the whole
			// engine and is not imported; what its types say is checked
			// here: an admission policy with a Deny or Audit action, each
			// image glob, and each attestor a cosign key the validation
			// names.
			var p policiesv1.ImageValidatingPolicy
			if err := strict(b, &p); err != nil {
				return nil, fmt.Errorf("%s: kyverno's types: %w", what, err)
			}
			spec := p.Spec
			if !spec.AdmissionEnabled() || spec.BackgroundEnabled() {
				return nil, fmt.Errorf("%s: want admission on and background off", what)
			}
			if acts := spec.ValidationActions(); len(acts) != 1 || (acts[0] != "Deny" && acts[0] != "Audit") {
				return nil, fmt.Errorf("%s: validationActions %v, want Deny or Audit", what, acts)
			}
			if len(spec.MatchImageReferences) == 0 || len(spec.Attestors) == 0 || len(spec.Validations) != 1 {
				return nil, fmt.Errorf("%s: want image references, attestors and one validation", what)
			}
			for i, m := range spec.MatchImageReferences {
				if m.Glob == "" || m.Expression != "" {
					return nil, fmt.Errorf("%s: matchImageReferences[%d] is not a glob", what, i)
				}
			}
			for i, a := range spec.Attestors {
				if a.Cosign == nil || a.Cosign.Key == nil || a.Cosign.Key.Data == "" || a.Notary != nil {
					return nil, fmt.Errorf("%s: attestors[%d] is not a cosign key", what, i)
				}
				if !strings.Contains(spec.Validations[0].Expression, "attestors."+a.Name) {
					return nil, fmt.Errorf("%s: the validation does not name attestors[%d] %s", what, i, a.Name)
				}
			}
			c.IVPols = append(c.IVPols, &p)
		case tm.APIVersion == "policy.sigstore.dev/v1beta1" && tm.Kind == "ClusterImagePolicy":
			var p pcv1beta1.ClusterImagePolicy
			if err := strict(b, &p); err != nil {
				return nil, fmt.Errorf("%s: policy-controller's types: %w", what, err)
			}
			// As the API server admits it: policy-controller's defaulting
			// webhook first (it names an unset keyless url; the TrustRoot
			// the authority references is what verifies), then its
			// validating webhook.
			d := p.DeepCopy()
			d.SetDefaults(ctx)
			if err := d.Validate(ctx); err != nil {
				return nil, fmt.Errorf("%s: policy-controller's Validate: %w", what, err)
			}
			c.CIPs = append(c.CIPs, &p)
		case tm.APIVersion == "policy.sigstore.dev/v1alpha1" && tm.Kind == "TrustRoot":
			var r pcv1alpha1.TrustRoot
			if err := strict(b, &r); err != nil {
				return nil, fmt.Errorf("%s: policy-controller's types: %w", what, err)
			}
			d := r.DeepCopy()
			d.SetDefaults(ctx)
			if err := d.Validate(ctx); err != nil {
				return nil, fmt.Errorf("%s: policy-controller's Validate: %w", what, err)
			}
			c.Roots[r.Name] = &r
		case tm.APIVersion == "v1" && tm.Kind == "ConfigMap":
			var cm corev1.ConfigMap
			if err := strict(b, &cm); err != nil {
				return nil, fmt.Errorf("%s: k8s.io/api's types: %w", what, err)
			}
			data, ok := cm.Data[admission.CRIOKey]
			if !ok || len(cm.Data) != 1 || len(cm.BinaryData) != 0 {
				return nil, fmt.Errorf("%s: want exactly the key %s", what, admission.CRIOKey)
			}
			pol, err := signature.NewPolicyFromBytes([]byte(data))
			if err != nil {
				return nil, fmt.Errorf("%s: containers-image's policy parser: %w", what, err)
			}
			if _, err := signature.NewPolicyContext(pol); err != nil {
				return nil, fmt.Errorf("%s: containers-image's NewPolicyContext: %w", what, err)
			}
			// The docker transport accepts any scope string; each must be
			// a repository, fully qualified, as containers-image's
			// reference parser reads it (its namespace matching compares
			// that form).
			for scope := range pol.Transports["docker"] {
				named, err := reference.ParseNormalizedNamed(scope)
				if err != nil {
					return nil, fmt.Errorf("%s: scope %q: containers-image's reference parser: %w", what, scope, err)
				}
				if !reference.IsNameOnly(named) || named.Name() != scope {
					return nil, fmt.Errorf("%s: scope %q is not a fully qualified repository (%s)", what, scope, named.Name())
				}
			}
			again, err := json.Marshal(pol)
			if err != nil {
				return nil, fmt.Errorf("%s: marshal containers-image's policy: %w", what, err)
			}
			f := crioFragment{ConfigMap: &cm, Policy: pol}
			if err := strict(again, &f.Parsed); err != nil {
				return nil, fmt.Errorf("%s: containers-image's policy as it marshals it: %w\n%s", what, err, again)
			}
			c.CRIO = append(c.CRIO, f)
		default:
			return nil, fmt.Errorf("%s: not an admission object", what)
		}
	}
	return c, nil
}

// checkRendered is check on the objects admission.Render returned.
func checkRendered(t *testing.T, objs []*unstructured.Unstructured) *checked {
	t.Helper()
	var raw [][]byte
	for _, o := range objs {
		b, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b)
	}
	c, err := check(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// admissionObjects splits a multi-document YAML stream (render's output,
// a golden file) and returns, as JSON, every document of an admission kind
// (isAdmission), and the others' count.
func admissionObjects(stream []byte) (objs [][]byte, others [][]byte, err error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if err == io.EOF {
			return objs, others, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", n, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		b, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", n, err)
		}
		if string(bytes.TrimSpace(b)) == "null" {
			continue
		}
		var tm struct {
			APIVersion string         `json:"apiVersion"`
			Kind       string         `json:"kind"`
			Data       map[string]any `json:"data"`
		}
		if err := json.Unmarshal(b, &tm); err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", n, err)
		}
		if isAdmission(tm.APIVersion, tm.Kind, tm.Data) {
			objs = append(objs, b)
		} else {
			others = append(others, b)
		}
	}
}

// ofProfile is the objects of objs (JSON, as admissionObjects returns
// them) that carry profile's admission.Label.
func ofProfile(t *testing.T, objs [][]byte, profile string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, b := range objs {
		var o struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		if o.Metadata.Labels[admission.Label] == profile {
			out = append(out, b)
		}
	}
	return out
}
