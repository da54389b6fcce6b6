package workflows

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/coorflow/coorflow/llm"
)

// SchemaURL is the $id of the file format's JSON Schema.
const SchemaURL = "https://coorflow.dev/schema/coorflow-v1.schema.json"

//go:embed schema/coorflow-v1.schema.json
var schemaFile []byte

// schemaJSON is the file schema with the lists that registrations make
// filled in from them: the model providers (llm.Providers) and the
// built-in tools (builtinTools). It is made on first use, once the
// tables are filled in.
var schemaJSON = sync.OnceValue(func() []byte { return withRegistrations(schemaFile) })

// providerEnum is the list of a model's providers in the schema (the
// first property of $defs.model).
var providerEnum = regexp.MustCompile(`("required": \["provider", "model"\],\s*"properties": \{\s*"provider": \{"enum": )\[[^\]]*\]`)

// toolProperties are the entries of the tools section's properties in
// the schema ($defs.tools.properties), one per built-in tool.
var toolProperties = regexp.MustCompile(`(?s)("tools": \{\n      "type": "object",\n      "description": "[^"]*",\n      "properties": \{\n).*?(\n      \},\n      "additionalProperties")`)

// nodeTypes are the node types' enum and the if/then list that requires
// each type's fields ($defs.node).
var nodeTypes = regexp.MustCompile(`(?s)("node": \{\n      "type": "object",\n      "required": \["type"\],\n      "properties": \{\n        "type": \{"enum": )\[[^\]]*\](\}\n      \},\n      "allOf": \[\n).*?(\n      \]\n    \})`)

// nodeFields are the schemas of the node types' fields: the $defs after
// $defs.node, to the end.
var nodeFields = regexp.MustCompile(`(?s)(\n    "node": \{\n.*?\n    \},\n).*(\n  \}\n\}\n?)$`)

// withRegistrations returns the schema b with the providers llm knows,
// the built-in tools of builtinTools and the node types of nodeKindList.
func withRegistrations(b []byte) []byte {
	names, _ := json.Marshal(llm.Providers())
	list := strings.ReplaceAll(string(names), `","`, `", "`)
	b = providerEnum.ReplaceAll(b, []byte(`${1}`+list))
	entries := make([]string, len(builtinTools))
	for i, t := range builtinTools {
		entries[i] = fmt.Sprintf("        %q: %s", t.name, strings.ReplaceAll(t.schema, "\n", "\n        "))
	}
	props := strings.ReplaceAll(strings.Join(entries, ",\n"), "$", "$$")
	b = toolProperties.ReplaceAll(b, []byte("${1}"+props+"${2}"))
	var kinds, ifs, defs []string
	for _, k := range nodeKindList {
		kinds = append(kinds, fmt.Sprintf("%q", k.name))
		if k.fields != "" {
			ifs = append(ifs, fmt.Sprintf(`        {"if": {"required": ["type"], "properties": {"type": {"const": %q}}}, "then": {"$$ref": "#/$$defs/%s"}}`, k.name, k.fields))
			defs = append(defs, fmt.Sprintf("    %q: %s", k.fields, strings.ReplaceAll(strings.ReplaceAll(k.fieldsSchema, "$", "$$"), "\n", "\n    ")))
		}
	}
	b = nodeTypes.ReplaceAll(b, []byte("${1}["+strings.Join(kinds, ", ")+"]${2}"+strings.Join(ifs, ",\n")+"${3}"))
	return nodeFields.ReplaceAll(b, []byte("${1}"+strings.Join(defs, ",\n")+"${2}"))
}

// Schema returns the JSON Schema of the workflow file format
// (workflows/schema/coorflow-v1.schema.json in the repository), which
// editors can use to complete and check files.
func Schema() []byte { return bytes.Clone(schemaJSON()) }

var fileSchema = sync.OnceValues(compileFileSchema)

// compileFileSchema compiles schemaJSON.
func compileFileSchema() (*compiledSchema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(SchemaURL, bytes.NewReader(schemaJSON())); err != nil {
		return nil, fmt.Errorf("workflows: the file schema does not load: %w", err)
	}
	s, err := c.Compile(SchemaURL)
	if err != nil {
		return nil, fmt.Errorf("workflows: the file schema does not compile: %w", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(schemaJSON(), &raw); err != nil {
		return nil, fmt.Errorf("workflows: the file schema is not JSON: %w", err)
	}
	return &compiledSchema{s: s, raw: raw}, nil
}

type compiledSchema struct {
	s   *jsonschema.Schema
	raw map[string]any
}

// validateSchema checks the document against the file schema and records
// every leaf error as a problem.
func (d *document) validateSchema(ps *problems) error {
	cs, err := fileSchema()
	if err != nil {
		return err
	}
	err = cs.s.Validate(d.value)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return fmt.Errorf("workflows: validate %s: %w", d.file, err)
	}
	for _, leaf := range leaves(ve) {
		d.schemaProblem(cs, leaf, ps)
	}
	return nil
}

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// friendly messages for the patterns of the schema.
var patternMessages = map[string]string{
	"duration":    "must be a duration such as 30s, 2m or 1h30m",
	"name":        "must start with a letter or _ and hold only letters, digits, _, . and -",
	"api_key_env": "must be the name of an environment variable, such as OPENAI_API_KEY",
	"agent":       "must be snake_case: lowercase letters, digits and _, starting with a letter (at most 48)",
}

func (d *document) schemaProblem(cs *compiledSchema, ve *jsonschema.ValidationError, ps *problems) {
	l := d.loc(ve.InstanceLocation)
	keyword := ve.KeywordLocation[strings.LastIndexByte(ve.KeywordLocation, '/')+1:]
	frag := ve.AbsoluteKeywordLocation[strings.IndexByte(ve.AbsoluteKeywordLocation, '#')+1:]
	parent := cs.lookup(strings.TrimSuffix(frag, "/"+keyword))
	inst := lookupValue(d.value, ve.InstanceLocation)
	switch keyword {
	case "additionalProperties":
		obj, _ := inst.(map[string]any)
		known := keys(parent["properties"])
		for _, k := range sortedKeys(obj) {
			if slices.Contains(known, k) {
				continue
			}
			kl := d.loc(ve.InstanceLocation + "/" + escapePointer(k))
			ps.at(kl.key, kl.path, "unknown field %q%s", k, suggest(k, known, "known fields"))
			ps.list[len(ps.list)-1].unknown = true
		}
	case "required":
		obj, _ := inst.(map[string]any)
		for _, r := range strs(parent["required"]) {
			if _, ok := obj[r]; !ok {
				ps.at(l.key, l.path, "missing required field %q", r)
				ps.list[len(ps.list)-1].missing = r
			}
		}
	case "enum":
		opts := strs(parent["enum"])
		got := fmt.Sprint(inst)
		ps.at(l.val, l.path, "%q is not one of %s%s", got, strings.Join(opts, ", "), suggest(got, opts, ""))
	case "const":
		ps.at(l.val, l.path, "must be %v, not %q", parent["const"], fmt.Sprint(inst))
	case "pattern":
		msg := ve.Message
		switch {
		case strings.Contains(frag, "duration"):
			msg = patternMessages["duration"]
		case strings.HasSuffix(l.path, "api_key_env"):
			msg = patternMessages["api_key_env"]
		case strings.HasSuffix(l.path, "agent"):
			msg = patternMessages["agent"]
		case l.path == "name":
			msg = patternMessages["name"]
		}
		ps.at(l.val, l.path, "%q %s", fmt.Sprint(inst), msg)
	case "type":
		if l.path == "" {
			ps.at(l.val, "", "a workflow file is a mapping of apiVersion, name, nodes, edges and the other sections, not a %s", jsonKind(inst))
			return
		}
		ps.at(l.val, l.path, "%s", strings.Replace(ve.Message, ", but got", ", got", 1))
	case "minProperties":
		ps.at(l.key, l.path, "must not be empty")
	case "minItems":
		ps.at(l.val, l.path, "needs at least %v items", parent["minItems"])
	default:
		ps.at(l.val, l.path, "%s", ve.Message)
	}
}

// lookup returns the schema object at a JSON pointer fragment.
func (cs *compiledSchema) lookup(frag string) map[string]any {
	v := lookupValue(cs.raw, frag)
	m, _ := v.(map[string]any)
	return m
}

func lookupValue(v any, ptr string) any {
	if ptr == "" {
		return v
	}
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			v = x[seg]
		case []any:
			var i int
			if _, err := fmt.Sscan(seg, &i); err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func keys(v any) []string {
	m, _ := v.(map[string]any)
	return sortedKeys(m)
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case string:
		return "string"
	case nil:
		return "null"
	}
	return "value"
}
