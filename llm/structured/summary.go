package structured

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// node is the part of a JSON Schema that Summarize reads.
type node struct {
	Type       json.RawMessage `json:"type"`
	Enum       []any           `json:"enum"`
	Properties json.RawMessage `json:"properties"`
	Required   []string        `json:"required"`
	Items      json.RawMessage `json:"items"`
}

// maxSummarized bounds how many properties Summarize names.
const maxSummarized = 12

// Summarize describes a JSON Schema in a line, for error messages: the
// root's type, and for an object its properties in order with their type
// and whether they are required, e.g. `a JSON object with "title"
// (string, required), "kind" ("research" or "processing", required)`. A
// schema it cannot read is "JSON matching the schema".
func Summarize(schema []byte) string {
	var n node
	if json.Unmarshal(schema, &n) != nil {
		return "JSON matching the schema"
	}
	types := typeNames(n.Type)
	switch {
	case slices.Equal(types, []string{"object"}) && len(n.Properties) > 0:
		return "a JSON object with " + properties(n)
	case slices.Equal(types, []string{"object"}):
		return "a JSON object"
	case slices.Equal(types, []string{"array"}):
		return "a JSON array of " + plural(n.Items)
	case len(n.Enum) > 0:
		return enumText(n.Enum)
	case len(types) > 0:
		return "a JSON " + strings.Join(types, " or ")
	}
	return "JSON matching the schema"
}

// properties lists the properties of an object schema, in order.
func properties(n node) string {
	keys, raws := ordered(n.Properties)
	var parts []string
	for i, k := range keys {
		if i == maxSummarized {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-i))
			break
		}
		desc := brief(raws[i])
		if slices.Contains(n.Required, k) {
			desc += ", required"
		}
		parts = append(parts, fmt.Sprintf("%q (%s)", k, desc))
	}
	return strings.Join(parts, ", ")
}

// brief describes a property's schema in a few words.
func brief(raw json.RawMessage) string {
	var n node
	if json.Unmarshal(raw, &n) != nil {
		return "any"
	}
	if len(n.Enum) > 0 {
		return enumText(n.Enum)
	}
	types := typeNames(n.Type)
	switch {
	case slices.Equal(types, []string{"array"}):
		return "array of " + plural(n.Items)
	case len(types) > 0:
		return strings.Join(types, " or ")
	}
	return "any"
}

// plural names the items of an array schema.
func plural(items json.RawMessage) string {
	var n node
	if json.Unmarshal(items, &n) != nil {
		return "values"
	}
	if types := typeNames(n.Type); len(types) == 1 {
		switch types[0] {
		case "object":
			return "objects"
		case "array":
			return "arrays"
		}
		return types[0] + "s"
	}
	return "values"
}

func enumText(values []any) string {
	var quoted []string
	for _, v := range values {
		b, _ := json.Marshal(v)
		quoted = append(quoted, string(b))
	}
	if len(quoted) == 1 {
		return "exactly " + quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// typeNames reads a schema's "type": a name or a list of names.
func typeNames(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	return many
}

// ordered returns the keys of a JSON object in the order written, with
// their values.
func ordered(obj json.RawMessage) ([]string, []json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
		keys, vals = append(keys, key), append(vals, v)
	}
	return keys, vals
}

// rootTypes returns the types a schema allows at its root, nil for any.
func rootTypes(schema []byte) []string {
	var n node
	if json.Unmarshal(schema, &n) != nil {
		return nil
	}
	return typeNames(n.Type)
}

// matchesType reports whether a JSON object or array is of one of the
// types in want; any is, when want is empty.
func matchesType(raw json.RawMessage, want []string) bool {
	if len(want) == 0 {
		return true
	}
	t := "object"
	if len(raw) > 0 && raw[0] == '[' {
		t = "array"
	}
	return slices.Contains(want, t)
}
