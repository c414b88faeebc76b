package kubecheck

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The admission policies render writes (internal/admission) are custom
// resources of projects the main module does not depend on: Kyverno's
// ClusterPolicy and ImageValidatingPolicy and sigstore policy-controller's ClusterImagePolicy and
// TrustRoot. For them kubecheck does what the API server does with a custom
// resource whose CRD is installed: it knows the apiVersion and kind, checks
// the metadata (ValidateObjectMetaAccessor with NameIsDNSSubdomain, the
// rule apiextensions-apiserver applies to every custom resource; these are
// cluster-scoped, so metadata.namespace must be empty), refuses fields
// outside the object's structural schema, and validates the object against
// that schema. The schema here is a minimal one: the fields render writes,
// their types, the required ones and the enumerations, with the checks the
// projects' own validation makes of those fields (an authority has one kind
// of key, a key is a PEM public key, a count is at most the entries). A
// field the schema does not list is refused even where the project's CRD
// has it: render must not start writing a field this oracle was not taught.
// The full validation, with Kyverno's and policy-controller's own Go types
// and validation code, is the separate admissiontest module's.

// customKind is one custom resource kind render writes.
type customKind struct {
	gvk schema.GroupVersionKind
	// spec is the structural schema of the object's spec.
	spec *node
}

var customKinds = []customKind{
	{gvk: schema.GroupVersionKind{Group: "kyverno.io", Version: "v1", Kind: "ClusterPolicy"}, spec: kyvernoSpec},
	{gvk: schema.GroupVersionKind{Group: "policies.kyverno.io", Version: "v1", Kind: "ImageValidatingPolicy"}, spec: imageValidatingPolicySpec},
	{gvk: schema.GroupVersionKind{Group: "policy.sigstore.dev", Version: "v1beta1", Kind: "ClusterImagePolicy"}, spec: clusterImagePolicySpec},
	{gvk: schema.GroupVersionKind{Group: "policy.sigstore.dev", Version: "v1alpha1", Kind: "TrustRoot"}, spec: trustRootSpec},
	nodeReadinessRuleKind,
}

func customKindOf(apiVersion, kind string) (customKind, bool) {
	for _, k := range customKinds {
		if k.gvk.GroupVersion().String() == apiVersion && k.gvk.Kind == kind {
			return k, true
		}
	}
	return customKind{}, false
}

// customObject is a custom resource's top level, decoded strictly: a field
// beside these is unknown.
type customObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              any `json:"spec"`
}

// checkCustom decodes doc strictly as a customObject and validates its
// metadata and spec.
func checkCustom(doc []byte, k customKind) field.ErrorList {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return field.ErrorList{&field.Error{Type: field.ErrorTypeDuplicate, BadValue: field.OmitValueType{}, Detail: oneLine(err.Error())}}
	}
	var obj customObject
	strict, err := sigsjson.UnmarshalStrict(j, &obj, sigsjson.DisallowUnknownFields)
	if err != nil {
		return field.ErrorList{decodeError(err)}
	}
	var errs field.ErrorList
	for _, e := range strict {
		errs = append(errs, strictError(e, k.gvk))
	}
	// Cluster-scoped: ValidateObjectMeta with requiresNamespace false
	// refuses a namespace.
	errs = append(errs, apivalidation.ValidateObjectMeta(&obj.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	if obj.Spec == nil {
		return append(errs, field.Required(field.NewPath("spec"), ""))
	}
	return append(errs, k.spec.validate(obj.Spec, field.NewPath("spec"))...)
}

// node is one level of a structural schema, in the sense of
// apiextensions' structural schemas: a type, and for an object its
// properties (no others allowed), for an array its items.
type node struct {
	typ string // "object", "array", "string", "boolean", "integer"
	// props are an object's fields; required those that must be set.
	props map[string]*node
	// values, for an object without props, validates every value (a map
	// such as matchLabels).
	values   *node
	required []string
	// oneOf lists fields of which exactly one must be set.
	oneOf []string
	// items is an array's element; minItems its least length.
	items    *node
	minItems int
	// enum lists a string's allowed values; min and max bound an integer
	// (max 0: none); minLength bounds a string.
	enum      []string
	min, max  int64
	minLength int
	maxLength int
	// check, if set, validates the value further (PEM, base64, a count
	// against its entries).
	check func(v any, p *field.Path) field.ErrorList
}

func (n *node) validate(v any, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch n.typ {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return field.ErrorList{field.TypeInvalid(p, typeName(v), "must be an object")}
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if n.values != nil {
				errs = append(errs, n.values.validate(m[k], p.Key(k))...)
				continue
			}
			c, ok := n.props[k]
			if !ok {
				errs = append(errs, field.Forbidden(p.Child(k), "unknown field: not in the schema of what stowage renders"))
				continue
			}
			errs = append(errs, c.validate(m[k], p.Child(k))...)
		}
		for _, r := range n.required {
			if _, ok := m[r]; !ok {
				errs = append(errs, field.Required(p.Child(r), ""))
			}
		}
		if len(n.oneOf) > 0 {
			var set []string
			for _, f := range n.oneOf {
				if _, ok := m[f]; ok {
					set = append(set, f)
				}
			}
			if len(set) != 1 {
				errs = append(errs, field.Invalid(p, strings.Join(set, ", "), "exactly one of "+strings.Join(n.oneOf, ", ")+" must be set"))
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return field.ErrorList{field.TypeInvalid(p, typeName(v), "must be an array")}
		}
		if len(a) < n.minItems {
			errs = append(errs, field.Required(p, fmt.Sprintf("must have at least %d item(s)", n.minItems)))
		}
		for i, e := range a {
			errs = append(errs, n.items.validate(e, p.Index(i))...)
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			return field.ErrorList{field.TypeInvalid(p, typeName(v), "must be a string")}
		}
		if len(n.enum) > 0 && !slices.Contains(n.enum, s) {
			errs = append(errs, field.NotSupported(p, s, n.enum))
		}
		if len(s) < n.minLength {
			errs = append(errs, field.Invalid(p, s, fmt.Sprintf("must have at least %d characters", n.minLength)))
		}
		if n.maxLength > 0 && len(s) > n.maxLength {
			errs = append(errs, field.TooLong(p, s, n.maxLength))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return field.ErrorList{field.TypeInvalid(p, typeName(v), "must be a boolean")}
		}
	case "integer":
		i, ok := v.(int64)
		if !ok {
			return field.ErrorList{field.TypeInvalid(p, typeName(v), "must be an integer")}
		}
		if i < n.min || (n.max > 0 && i > n.max) {
			errs = append(errs, field.Invalid(p, i, fmt.Sprintf("must be between %d and %d", n.min, n.max)))
		}
	}
	if n.check != nil && len(errs) == 0 {
		errs = append(errs, n.check(v, p)...)
	}
	return errs
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	default:
		return "number"
	}
}

// Builders of schema nodes.

func object(props map[string]*node, required ...string) *node {
	return &node{typ: "object", props: props, required: required}
}

func arrayOf(items *node, minItems int) *node {
	return &node{typ: "array", items: items, minItems: minItems}
}

func str() *node              { return &node{typ: "string"} }
func nonEmpty() *node         { return &node{typ: "string", minLength: 1} }
func enum(vs ...string) *node { return &node{typ: "string", enum: vs} }
func boolean() *node          { return &node{typ: "boolean"} }

func withOneOf(n *node, fields ...string) *node {
	n.oneOf = fields
	return n
}

func withCheck(n *node, check func(any, *field.Path) field.ErrorList) *node {
	n.check = check
	return n
}

// publicKeysPEM is a string of one or more PEM "PUBLIC KEY" blocks, each a
// PKIX public key, and nothing else: what Kyverno's publicKeys and
// policy-controller's key data parse.
func publicKeysPEM() *node {
	return withCheck(nonEmpty(), func(v any, p *field.Path) field.ErrorList {
		return pemBlocks([]byte(v.(string)), "PUBLIC KEY", p)
	})
}

// certsPEM is a string of one or more PEM certificates.
func certsPEM() *node {
	return withCheck(nonEmpty(), func(v any, p *field.Path) field.ErrorList {
		return pemBlocks([]byte(v.(string)), "CERTIFICATE", p)
	})
}

// base64PEM is a []byte field in JSON (standard base64) holding PEM blocks
// of typ, as policy-controller's TrustRoot carries certificate chains and
// log keys.
func base64PEM(typ string) *node {
	return withCheck(nonEmpty(), func(v any, p *field.Path) field.ErrorList {
		b, err := base64.StdEncoding.DecodeString(v.(string))
		if err != nil {
			return field.ErrorList{field.Invalid(p, field.OmitValueType{}, "must be base64: "+err.Error())}
		}
		return pemBlocks(b, typ, p)
	})
}

func pemBlocks(b []byte, typ string, p *field.Path) field.ErrorList {
	n := 0
	for rest := b; len(bytes.TrimSpace(rest)) > 0; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return field.ErrorList{field.Invalid(p, field.OmitValueType{}, fmt.Sprintf("PEM block %d: not PEM", n+1))}
		}
		if block.Type != typ {
			return field.ErrorList{field.Invalid(p, field.OmitValueType{}, fmt.Sprintf("PEM block %d: %q, want %q", n+1, block.Type, typ))}
		}
		var err error
		if typ == "CERTIFICATE" {
			_, err = x509.ParseCertificate(block.Bytes)
		} else {
			_, err = x509.ParsePKIXPublicKey(block.Bytes)
		}
		if err != nil {
			return field.ErrorList{field.Invalid(p, field.OmitValueType{}, fmt.Sprintf("PEM block %d: %v", n+1, err))}
		}
	}
	if n == 0 {
		return field.ErrorList{field.Required(p, "no PEM block")}
	}
	return nil
}

// Kyverno kyverno.io/v1 ClusterPolicy: the fields internal/admission
// writes. Kyverno's CRD limits a rule name to 63 characters and
// webhookTimeoutSeconds to the admission webhook range, 1 to 30; a
// failureAction is Enforce or Audit; an attestor set's count is at least 1
// and at most its entries; an entry has one kind of attestor.
var kyvernoSpec = func() *node {
	rekor := object(map[string]*node{"ignoreTlog": boolean(), "pubkey": publicKeysPEM(), "url": nonEmpty()})
	ctlog := object(map[string]*node{"ignoreSCT": boolean(), "pubkey": publicKeysPEM(), "tsaCertChain": certsPEM()})
	keys := object(map[string]*node{"publicKeys": publicKeysPEM(), "rekor": rekor, "ctlog": ctlog}, "publicKeys")
	keyless := object(map[string]*node{
		"issuer": nonEmpty(), "issuerRegExp": nonEmpty(), "subject": nonEmpty(), "subjectRegExp": nonEmpty(),
		"roots": certsPEM(), "rekor": rekor, "ctlog": ctlog,
	})
	keyless.check = exactIdentity
	entry := withOneOf(object(map[string]*node{"keys": keys, "keyless": keyless}), "keys", "keyless")
	attestorSet := object(map[string]*node{
		"count":   {typ: "integer", min: 1},
		"entries": arrayOf(entry, 1),
	}, "entries")
	attestorSet.check = func(v any, p *field.Path) field.ErrorList {
		m := v.(map[string]any)
		c, ok := m["count"].(int64)
		if e, _ := m["entries"].([]any); ok && c > int64(len(e)) {
			return field.ErrorList{field.Invalid(p.Child("count"), c, fmt.Sprintf("must be at most the %d entries", len(e)))}
		}
		return nil
	}
	verify := object(map[string]*node{
		"imageReferences": arrayOf(nonEmpty(), 1),
		"failureAction":   enum("Enforce", "Audit"),
		"mutateDigest":    boolean(),
		"verifyDigest":    boolean(),
		"required":        boolean(),
		"attestors":       arrayOf(attestorSet, 1),
	}, "imageReferences", "attestors")
	filter := object(map[string]*node{"resources": object(map[string]*node{"kinds": arrayOf(nonEmpty(), 1)}, "kinds")}, "resources")
	match := withOneOf(object(map[string]*node{"any": arrayOf(filter, 1), "all": arrayOf(filter, 1)}), "any", "all")
	rule := object(map[string]*node{
		"name":         {typ: "string", minLength: 1, maxLength: 63},
		"match":        match,
		"verifyImages": arrayOf(verify, 1),
	}, "name", "match", "verifyImages")
	rules := arrayOf(rule, 1)
	rules.check = func(v any, p *field.Path) field.ErrorList {
		var errs field.ErrorList
		seen := map[string]bool{}
		for i, r := range v.([]any) {
			name, _ := r.(map[string]any)["name"].(string)
			if seen[name] {
				errs = append(errs, field.Duplicate(p.Index(i).Child("name"), name))
			}
			seen[name] = true
		}
		return errs
	}
	return object(map[string]*node{
		"background":            boolean(),
		"webhookTimeoutSeconds": {typ: "integer", min: 1, max: 30},
		"rules":                 rules,
	}, "rules")
}()

// Kyverno policies.kyverno.io/v1 ImageValidatingPolicy (Kyverno 1.19's
// CRD, config/crds/policies.kyverno.io): the fields internal/admission
// writes. The CRD requires attestors and validations, an attestor's name
// and one of cosign and notary, a matchImageReferences entry's glob or
// expression, a validation's expression; it enumerates validationActions
// (Deny, Audit, Warn) and failurePolicy (Ignore, Fail); the webhook
// timeout is the admission webhook range, 1 to 30.
var imageValidatingPolicySpec = func() *node {
	key := object(map[string]*node{"data": publicKeysPEM(), "hashAlgorithm": enum("sha224", "sha256", "sha384", "sha512")}, "data")
	ctlog := object(map[string]*node{"insecureIgnoreTlog": boolean(), "insecureIgnoreSCT": boolean()})
	cosign := object(map[string]*node{"key": key, "ctlog": ctlog}, "key")
	attestor := object(map[string]*node{"name": nonEmpty(), "cosign": cosign}, "name", "cosign")
	rule := object(map[string]*node{
		"apiGroups":   arrayOf(str(), 1),
		"apiVersions": arrayOf(nonEmpty(), 1),
		"operations":  arrayOf(enum("CREATE", "UPDATE", "DELETE", "CONNECT", "*"), 1),
		"resources":   arrayOf(nonEmpty(), 1),
	}, "apiGroups", "apiVersions", "operations", "resources")
	return object(map[string]*node{
		"validationActions":    arrayOf(enum("Deny", "Audit", "Warn"), 1),
		"failurePolicy":        enum("Ignore", "Fail"),
		"webhookConfiguration": object(map[string]*node{"timeoutSeconds": {typ: "integer", min: 1, max: 30}}),
		"evaluation":           object(map[string]*node{"background": object(map[string]*node{"enabled": boolean()})}),
		"matchConstraints":     object(map[string]*node{"resourceRules": arrayOf(rule, 1)}, "resourceRules"),
		"matchImageReferences": arrayOf(object(map[string]*node{"glob": nonEmpty()}, "glob"), 1),
		"validationConfigurations": object(map[string]*node{
			"mutateDigest": boolean(), "verifyDigest": boolean(), "required": boolean(),
		}),
		"attestors":   arrayOf(attestor, 1),
		"validations": arrayOf(object(map[string]*node{"expression": nonEmpty(), "message": str()}, "expression"), 1),
	}, "attestors", "validations", "matchConstraints", "matchImageReferences")
}()

// policy-controller policy.sigstore.dev/v1beta1 ClusterImagePolicy: images
// (each a glob) and authorities (each one of key or keyless; a key's data
// a PEM public key; keyless identities each an issuer and a subject, exact
// or regular expression), mode enforce or warn.
var clusterImagePolicySpec = func() *node {
	ref := object(map[string]*node{"trustRootRef": nonEmpty()}, "trustRootRef")
	identity := object(map[string]*node{"issuer": nonEmpty(), "issuerRegExp": nonEmpty(), "subject": nonEmpty(), "subjectRegExp": nonEmpty()})
	identity.check = exactIdentity
	authority := withOneOf(object(map[string]*node{
		"name": nonEmpty(),
		"key": object(map[string]*node{
			"data":          publicKeysPEM(),
			"hashAlgorithm": enum("sha224", "sha256", "sha384", "sha512"),
		}, "data"),
		"keyless": object(map[string]*node{
			"identities":        arrayOf(identity, 1),
			"trustRootRef":      nonEmpty(),
			"insecureIgnoreSCT": boolean(),
		}, "identities"),
		"ctlog":            object(map[string]*node{"url": nonEmpty(), "trustRootRef": nonEmpty()}),
		"rfc3161timestamp": ref,
		"signatureFormat":  enum("simplesigning", "bundle"),
	}, "name"), "key", "keyless")
	return object(map[string]*node{
		"images":      arrayOf(object(map[string]*node{"glob": nonEmpty()}, "glob"), 1),
		"authorities": arrayOf(authority, 1),
		"mode":        enum("enforce", "warn"),
	}, "images", "authorities")
}()

// policy-controller policy.sigstore.dev/v1alpha1 TrustRoot with
// sigstoreKeys (render writes no repository or remote one): certificate
// and timestamp authorities with a base64 PEM chain, transparency and CT
// logs with a base64 PEM public key.
var trustRootSpec = func() *node {
	ca := object(map[string]*node{
		"subject":   object(map[string]*node{"organization": str(), "commonName": str()}),
		"uri":       nonEmpty(),
		"certChain": base64PEM("CERTIFICATE"),
	}, "uri", "certChain")
	log := object(map[string]*node{
		"baseURL":       nonEmpty(),
		"hashAlgorithm": enum("sha-256", "sha-384", "sha-512"),
		"publicKey":     base64PEM("PUBLIC KEY"),
	}, "baseURL", "hashAlgorithm", "publicKey")
	return object(map[string]*node{
		"sigstoreKeys": object(map[string]*node{
			"certificateAuthorities": arrayOf(ca, 1),
			"timestampAuthorities":   arrayOf(ca, 0),
			"tLogs":                  arrayOf(log, 0),
			"ctLogs":                 arrayOf(log, 0),
		}, "certificateAuthorities"),
	}, "sigstoreKeys")
}()

// exactIdentity is the check of a keyless identity, Kyverno's and
// policy-controller's alike: exactly one of issuer and issuerRegExp, and
// exactly one of subject and subjectRegExp.
func exactIdentity(v any, p *field.Path) field.ErrorList {
	m := v.(map[string]any)
	var errs field.ErrorList
	for _, pair := range [][2]string{{"issuer", "issuerRegExp"}, {"subject", "subjectRegExp"}} {
		_, a := m[pair[0]]
		_, b := m[pair[1]]
		if a == b {
			errs = append(errs, field.Invalid(p, field.OmitValueType{}, fmt.Sprintf("exactly one of %s, %s must be set", pair[0], pair[1])))
		}
	}
	return errs
}
