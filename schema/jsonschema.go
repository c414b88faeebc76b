package schema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/encoding/jsonschema"
)

// jsonSchemaFile names jsonSchemaDocuments in CUE's positions.
const jsonSchemaFile = "schema/jsonschema/documents.cue"

// jsonSchemaDocuments defines, in the scope of the embedded config schema,
// the documents the JSON Schema describes: a config file and the two
// functionConfigs.
//
//go:embed jsonschema/documents.cue
var jsonSchemaDocuments []byte

// JSONSchemaID is the $id of the generated JSON Schema: where the
// repository keeps it (docs/stowage.schema.json).
const JSONSchemaID = "https://raw.githubusercontent.com/stowage/stowage/main/docs/stowage.schema.json"

// JSONSchema returns the JSON Schema (draft 2020-12) of a document stowage
// reads (a config file, a Stowage or a JupyterImagePuller
// functionConfig), generated from the CUE schema by CUE's own
// encoding/jsonschema, indented, with a trailing newline: the same bytes
// for the same schema. Errors are CUE's, and none for the embedded schema.
//
// Three changes to what CUE generates, each where CUE's definition says
// less or more than a YAML file holds: #Config requires no field (the
// files of a config directory are unified, so one file may leave out the
// profiles another gives, and a Stowage without profiles only pins
// workloads); a Stowage's spec is #Config plus profile (the profile to
// render); and the string patterns Load checks in Go after CUE (names
// that become Kubernetes names, image references, printable names;
// Patterns) are added to the fields they apply to, so that an editor
// refuses what `stowage vet` refuses.
func JSONSchema() ([]byte, error) {
	ctx := cuecontext.New()
	base := ctx.CompileBytes(Source, cue.Filename(SchemaFile))
	if err := base.Err(); err != nil {
		return nil, err
	}
	docs := ctx.CompileBytes(jsonSchemaDocuments, cue.Filename(jsonSchemaFile), cue.Scope(base))
	if err := docs.Err(); err != nil {
		return nil, err
	}
	expr, err := jsonschema.Generate(docs.LookupPath(cue.ParsePath("#Document")), nil)
	if err != nil {
		return nil, fmt.Errorf("generating the JSON Schema: %w", err)
	}
	v := ctx.BuildExpr(expr)
	if err := v.Err(); err != nil {
		return nil, err
	}
	raw, err := v.MarshalJSON()
	if err != nil {
		return nil, err
	}
	// Re-encoded through a map: sorted keys, and $id and a title added.
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	defs, _ := doc["$defs"].(map[string]any)
	cfg, _ := defs["Config"].(map[string]any)
	st, _ := defs["Stowage"].(map[string]any)
	stProps, _ := st["properties"].(map[string]any)
	if cfg == nil || stProps == nil {
		return nil, fmt.Errorf("the generated JSON Schema has no Config or Stowage definition")
	}
	if err := addPatterns(defs); err != nil {
		return nil, err
	}
	delete(cfg, "required")
	spec := map[string]any{}
	for k, v := range cfg {
		spec[k] = v
	}
	props := map[string]any{"profile": map[string]any{
		"type": "string", "not": map[string]any{"const": ""},
		"description": "profile is the profile to render; optional when the config has one.",
	}}
	for k, v := range cfg["properties"].(map[string]any) {
		props[k] = v
	}
	spec["properties"] = props
	spec["description"] = "The spec of a Stowage: a config (#Config) and the profile to render."
	defs["StowageSpec"] = spec
	stProps["spec"] = map[string]any{"$ref": "#/$defs/StowageSpec"}
	doc["$id"] = JSONSchemaID
	doc["title"] = "stowage config file, Stowage or JupyterImagePuller functionConfig"
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
