package workflows

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/expr-lang/expr/types"
)

// shape is the type of a value as expressions see it: a JSON type, with
// the items of an array and the properties of an object.
type shape struct {
	kind  string // string, number, integer, boolean, array, object or any
	items *shape
	props map[string]*shape
	// open objects accept keys beyond props.
	open bool
}

var anyShape = &shape{kind: "any"}

// shapeOfSchema reads a channel's JSON Schema (the subset the file format
// allows).
func shapeOfSchema(s map[string]any) *shape {
	kind, _ := s["type"].(string)
	sh := &shape{kind: kind}
	switch kind {
	case "":
		sh.kind = "any"
	case "array":
		sh.items = anyShape
		if items, ok := s["items"].(map[string]any); ok {
			sh.items = shapeOfSchema(items)
		}
	case "object":
		props, _ := s["properties"].(map[string]any)
		sh.open = len(props) == 0 || s["additionalProperties"] != false
		sh.props = make(map[string]*shape, len(props))
		for k, v := range props {
			p, _ := v.(map[string]any)
			sh.props[k] = shapeOfSchema(p)
		}
	}
	return sh
}

// shapeOfType reads a Go type through its JSON encoding (field names from
// json tags).
func shapeOfType(t reflect.Type) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return &shape{kind: "string"}
	case reflect.Bool:
		return &shape{kind: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &shape{kind: "integer"}
	case reflect.Float32, reflect.Float64:
		return &shape{kind: "number"}
	case reflect.Slice, reflect.Array:
		return &shape{kind: "array", items: shapeOfType(t.Elem())}
	case reflect.Map:
		return &shape{kind: "object", open: true, props: map[string]*shape{}}
	case reflect.Struct:
		sh := &shape{kind: "object", props: map[string]*shape{}}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			sh.props[name] = shapeOfType(f.Type)
		}
		return sh
	}
	return anyShape
}

// shapeOfValue infers the shape of a config value.
func shapeOfValue(v any) *shape {
	switch x := v.(type) {
	case string:
		return &shape{kind: "string"}
	case bool:
		return &shape{kind: "boolean"}
	case int, int64:
		return &shape{kind: "integer"}
	case float64:
		return &shape{kind: "number"}
	case []any:
		return &shape{kind: "array", items: anyShape}
	case map[string]any:
		sh := &shape{kind: "object", props: map[string]*shape{}}
		for k, e := range x {
			sh.props[k] = shapeOfValue(e)
		}
		return sh
	}
	return anyShape
}

// exprType is the shape as expr-lang's checker sees it.
func (s *shape) exprType() types.Type {
	switch s.kind {
	case "string":
		return types.String
	case "number":
		return types.Float64
	case "integer":
		return types.Int
	case "boolean":
		return types.Bool
	case "array":
		return types.Array(s.items.exprType())
	case "object":
		m := types.Map{}
		for k, p := range s.props {
			m[k] = p.exprType()
		}
		if s.open {
			m[types.Extra] = types.Any
		}
		return m
	}
	return types.Any
}

// zero is the value an expression sees for a channel nothing was written
// to.
func (s *shape) zero() any {
	switch s.kind {
	case "string":
		return ""
	case "number":
		return 0.0
	case "integer":
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object":
		m := make(map[string]any, len(s.props))
		for k, p := range s.props {
			m[k] = p.zero()
		}
		return m
	}
	return nil
}

// normalize converts a JSON-like value to what the shape's expression
// type expects: whole numbers for integers, float64 for numbers, every
// declared property of an object present.
func (s *shape) normalize(v any) any {
	if v == nil {
		return s.zero()
	}
	switch s.kind {
	case "integer":
		if f, ok := number(v); ok {
			return int(f)
		}
	case "number":
		if f, ok := number(v); ok {
			return f
		}
	case "array":
		list, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(list))
		for i, e := range list {
			out[i] = s.items.normalize(e)
		}
		return out
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(m)+len(s.props))
		for k, e := range m {
			if p, ok := s.props[k]; ok {
				out[k] = p.normalize(e)
			} else {
				out[k] = e
			}
		}
		for k, p := range s.props {
			if _, ok := out[k]; !ok {
				out[k] = p.zero()
			}
		}
		return out
	case "any":
		if n, ok := v.(json.Number); ok {
			f, _ := n.Float64()
			return f
		}
	}
	return v
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// generic turns a Go value into JSON-like values (maps, slices, float64).
func generic(v any) (any, error) {
	switch v.(type) {
	case nil, string, bool, float64, int, map[string]any, []any:
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("workflows: encode %T: %w", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("workflows: decode %T: %w", v, err)
	}
	return out, nil
}
