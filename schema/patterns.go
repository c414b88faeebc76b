package schema

import "fmt"

// The string patterns of the JSON Schema (ECMA-262 regular expressions
// with the u flag, as editors read JSON Schema's; each is also RE2, so Go
// reads it the same; the separators are written as the characters). They
// state, for an editor, the rules Load checks in Go after CUE
// (validate.go); TestJSONSchemaPatterns holds each to Load.
const (
	// PatternDNSLabel is a DNS-1123 label (k8s.io/apimachinery's
	// IsDNS1123Label), at most 63 characters (MaxLength).
	PatternDNSLabel = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// PatternDNSSubdomain is a DNS-1123 subdomain (IsDNS1123Subdomain),
	// at most 253 characters.
	PatternDNSSubdomain = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// PatternPrintable refuses what escape.Line rewrites: control
	// characters (C0, DEL, C1), format characters (zero-width and
	// bidirectional ones among them) and the line and paragraph
	// separators.
	PatternPrintable = `^[^\p{Cc}\p{Cf}` + "\u2028\u2029" + `]*$`
	// PatternReference is an image reference as internal/imageref reads
	// it: an optional registry (a host with a '.' or a port, localhost, or
	// a bracketed IPv6 address, and an optional port), a lowercase
	// repository path of components joined by '.', '_', '__' or '-', an
	// optional tag of 1 to 128 letters, digits, '_', '.' and '-' not
	// starting with '.' or '-', and an optional digest (sha256, sha384 or
	// sha512 with its hex length).
	PatternReference = `^((localhost|\[[0-9A-Fa-f:]+\]|[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+|[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?:[0-9]+)(:[0-9]+)?/)?` +
		`[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*` +
		`(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?` +
		`(@(sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128}))?$`
)

// PatternDiskSize is a nodeDisk size: a Kubernetes quantity
// (resource.ParseQuantity's grammar) without a minus sign. Load also
// refuses zero and more than MaxDiskBytes, which a pattern does not say.
const PatternDiskSize = `^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$`

// stringRule is a pattern and a length bound for the string at a property
// of a $defs definition ("Puller", "name"); property "" is the
// definition itself (a string definition such as Reference), and
// property "*" its map's keys (propertyNames of the property named by
// Map).
type stringRule struct {
	def, prop, mapProp string
	pattern            string
	maxLength          int
	// items: the property is a list of such strings.
	items bool
}

// Patterns are where the JSON Schema gets a pattern: each field whose
// string Load refuses by a Go rule that a regular expression states.
var patterns = []stringRule{
	{def: "Reference", pattern: PatternReference},
	{def: "Puller", prop: "name", pattern: PatternDNSLabel, maxLength: MaxPullerName},
	{def: "Puller", prop: "namespace", pattern: PatternDNSLabel, maxLength: 63},
	{def: "Puller", prop: "tenants", pattern: PatternDNSLabel, maxLength: 63, items: true},
	{def: "Puller", prop: "priorityClassName", pattern: PatternDNSSubdomain, maxLength: 253},
	{def: "Puller", prop: "recordsName", pattern: PatternDNSSubdomain, maxLength: 253},
	{def: "NodeDisk", prop: "size", pattern: PatternDiskSize},
	{def: "Profile", prop: "namespace", pattern: PatternDNSLabel, maxLength: 63},
	{def: "Auth", prop: "secret", pattern: PatternDNSSubdomain, maxLength: 253},
	{def: "AdmissionPolicy", prop: "name", pattern: PatternDNSLabel, maxLength: 40},
	{def: "VerifyIdentity", prop: "identity", pattern: PatternPrintable},
	{def: "VerifyIdentity", prop: "issuer", pattern: PatternPrintable},
	{def: "VerifyIdentity", prop: "identityRegexp", pattern: PatternPrintable},
	{def: "VerifyIdentity", prop: "issuerRegexp", pattern: PatternPrintable},
	{def: "Config", mapProp: "images", pattern: PatternPrintable},
	{def: "Config", mapProp: "environments", pattern: PatternPrintable},
}

// addPatterns sets patterns in the generated definitions. A definition or
// property it names that the schema lacks is an error: the table follows
// the CUE schema.
func addPatterns(defs map[string]any) error {
	for _, r := range patterns {
		def, _ := defs[r.def].(map[string]any)
		if def == nil {
			return fmt.Errorf("JSON Schema pattern: no definition %s", r.def)
		}
		target := def
		switch {
		case r.mapProp != "":
			props, _ := def["properties"].(map[string]any)
			m, _ := props[r.mapProp].(map[string]any)
			if m == nil {
				return fmt.Errorf("JSON Schema pattern: no property %s.%s", r.def, r.mapProp)
			}
			names := map[string]any{"type": "string"}
			m["propertyNames"] = names
			target = names
		case r.prop != "":
			props, _ := def["properties"].(map[string]any)
			p, _ := props[r.prop].(map[string]any)
			if p == nil {
				return fmt.Errorf("JSON Schema pattern: no property %s.%s", r.def, r.prop)
			}
			target = p
			if r.items {
				it, _ := p["items"].(map[string]any)
				if it == nil {
					return fmt.Errorf("JSON Schema pattern: %s.%s is not a list", r.def, r.prop)
				}
				target = it
			}
		}
		target["pattern"] = r.pattern
		if r.maxLength > 0 {
			target["maxLength"] = r.maxLength
		}
	}
	return nil
}
