// Package typeschema derives a JSON Schema from a Go type: the one deriver
// of the module, behind structured.Schema (the schema a model's JSON reply
// must match) and tools.Typed (the schema of a tool's arguments).
package typeschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// For derives a JSON Schema from a Go type, following encoding/json and
// the field tags `json` and `jsonschema`; structured.Schema documents the
// mapping and the tag options, which are the same for tools.Typed.
//
// An error names the field by its Go path (plan.Steps[].Kind) and has no
// package prefix: callers wrap it with their own sentinel.
func For(t reflect.Type) ([]byte, error) {
	s, err := (&generator{seen: map[reflect.Type]bool{}}).schema(t, t.String())
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// node is a JSON Schema; properties keep their order.
type node struct {
	Type                 string   `json:"type,omitempty"`
	Description          string   `json:"description,omitempty"`
	Format               string   `json:"format,omitempty"`
	Enum                 []any    `json:"enum,omitempty"`
	Minimum              *float64 `json:"minimum,omitempty"`
	Maximum              *float64 `json:"maximum,omitempty"`
	Items                *node    `json:"items,omitempty"`
	Properties           *props   `json:"properties,omitempty"`
	Required             []string `json:"required,omitempty"`
	AdditionalProperties any      `json:"additionalProperties,omitempty"`
}

// props are the properties of an object schema, in order.
type props struct {
	names  []string
	nodes  []*node
	depths []int // embedding depth of the field behind each property
}

// MarshalJSON writes the properties in order.
func (p *props) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range p.names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		v, err := json.Marshal(p.nodes[i])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

var (
	timeType       = reflect.TypeFor[time.Time]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

type generator struct {
	seen map[reflect.Type]bool // structs being described, to catch recursion
}

// schema describes t, found at path (for error messages).
func (g *generator) schema(t reflect.Type, path string) (*node, error) {
	switch t {
	case timeType:
		return &node{Type: "string", Format: "date-time"}, nil
	case rawMessageType:
		return &node{}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return &node{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return &node{Type: "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return &node{Type: "number"}, nil
	case reflect.String:
		return &node{Type: "string"}, nil
	case reflect.Interface:
		return &node{}, nil
	case reflect.Pointer:
		return g.schema(t.Elem(), path)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return &node{Type: "string"}, nil
		}
		items, err := g.schema(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return &node{Type: "array", Items: items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%s: map keys must be strings, not %s", path, t.Key())
		}
		elem, err := g.schema(t.Elem(), path+"[key]")
		if err != nil {
			return nil, err
		}
		return &node{Type: "object", AdditionalProperties: elem}, nil
	case reflect.Struct:
		return g.object(t, path)
	}
	return nil, fmt.Errorf("%s: type %s has no JSON form", path, t)
}

// object describes a struct.
func (g *generator) object(t reflect.Type, path string) (*node, error) {
	if g.seen[t] {
		return nil, fmt.Errorf("%s: recursive type %s is not supported", path, t)
	}
	g.seen[t] = true
	defer delete(g.seen, t)
	n := &node{Type: "object", Properties: &props{}, AdditionalProperties: false}
	if err := g.fields(n, t, path, 0); err != nil {
		return nil, err
	}
	return n, nil
}

// fields adds the properties of struct t, embedded at depth, to n,
// flattening embedded structs. As in encoding/json, of two fields with the
// same name the less deeply embedded one wins; two at the same depth are
// an error (encoding/json would silently drop both).
func (g *generator) fields(n *node, t reflect.Type, path string, depth int) error {
	for f := range fieldsOf(t) {
		name, skip := jsonName(f)
		if skip {
			continue
		}
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := g.fields(n, ft, path, depth+1); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fpath := path + "." + f.Name
		fn, err := g.schema(ft, fpath)
		if err != nil {
			return err
		}
		required, err := applyTag(fn, ft, f.Tag.Get("jsonschema"), fpath)
		if err != nil {
			return err
		}
		if err := n.add(name, fn, required, depth, fpath); err != nil {
			return err
		}
	}
	return nil
}

// add adds property name to object n, or resolves a conflict by depth.
func (n *node) add(name string, fn *node, required bool, depth int, path string) error {
	p := n.Properties
	i := slices.Index(p.names, name)
	switch {
	case i < 0:
		p.names = append(p.names, name)
		p.nodes = append(p.nodes, fn)
		p.depths = append(p.depths, depth)
	case p.depths[i] == depth:
		return fmt.Errorf("%s: duplicate property %q at the same embedding depth", path, name)
	case p.depths[i] < depth:
		return nil
	default:
		p.nodes[i], p.depths[i] = fn, depth
		n.Required = slices.DeleteFunc(n.Required, func(r string) bool { return r == name })
	}
	if required {
		n.Required = append(n.Required, name)
	}
	return nil
}

// fieldsOf yields the fields of struct t.
func fieldsOf(t reflect.Type) func(yield func(reflect.StructField) bool) {
	return func(yield func(reflect.StructField) bool) {
		for i := range t.NumField() {
			if !yield(t.Field(i)) {
				return
			}
		}
	}
}

// jsonName returns the name in a field's json tag and whether the tag
// skips the field.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", true
	}
	name, _, _ := strings.Cut(tag, ",")
	return name, false
}

// applyTag applies a jsonschema tag to n, the schema of a field of type t,
// and reports whether the field is required.
func applyTag(n *node, t reflect.Type, tag, path string) (bool, error) {
	required := false
	for tag != "" {
		var opt string
		if strings.HasPrefix(tag, "description=") {
			opt, tag = tag, ""
		} else {
			opt, tag, _ = strings.Cut(tag, ",")
		}
		key, value, _ := strings.Cut(strings.TrimSpace(opt), "=")
		var err error
		switch key {
		case "":
		case "required":
			required = true
		case "description":
			n.Description = value
		case "format":
			n.Format = value
		case "enum":
			err = applyEnum(n, t, value)
		case "minimum", "maximum":
			var v float64
			if v, err = strconv.ParseFloat(value, 64); err == nil {
				if key == "minimum" {
					n.Minimum = &v
				} else {
					n.Maximum = &v
				}
			}
		default:
			err = fmt.Errorf("unknown option %q", key)
		}
		if err != nil {
			return false, fmt.Errorf("%s: jsonschema tag: %v", path, err)
		}
	}
	return required, nil
}

// applyEnum sets the allowed values, parsed by the kind of t (of its
// elements for a slice or array).
func applyEnum(n *node, t reflect.Type, value string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		if n.Items == nil {
			return fmt.Errorf("enum on %s", t)
		}
		return applyEnum(n.Items, t.Elem(), value)
	}
	for _, s := range strings.Split(value, "|") {
		v, err := parseValue(n.Type, s)
		if err != nil {
			return fmt.Errorf("enum value %q: %w", s, err)
		}
		n.Enum = append(n.Enum, v)
	}
	return nil
}

func parseValue(typ, s string) (any, error) {
	switch typ {
	case "string", "":
		return s, nil
	case "integer":
		return strconv.ParseInt(s, 10, 64)
	case "number":
		return strconv.ParseFloat(s, 64)
	case "boolean":
		return strconv.ParseBool(s)
	}
	return nil, fmt.Errorf("enum is not supported on %s", typ)
}
