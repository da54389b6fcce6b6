package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
)

// object is a JSON object decoded one level deep, keeping its key order.
type object struct {
	keys   []string
	fields map[string]json.RawMessage
}

var errNotObject = errors.New("not a JSON object")

func parseObject(s string) (object, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	tok, err := dec.Token()
	if err != nil {
		return object{}, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return object{}, errNotObject
	}
	o := object{fields: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return object{}, err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return object{}, err
		}
		if _, dup := o.fields[key]; !dup {
			o.keys = append(o.keys, key)
		}
		o.fields[key] = raw
	}
	if _, err := dec.Token(); err != nil {
		return object{}, err
	}
	if _, err := dec.Token(); err == nil {
		return object{}, errors.New("data after the object")
	}
	return o, nil
}

func (o object) encode() string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.fields[k])
	}
	b.WriteByte('}')
	return b.String()
}

// sameJSON reports whether two raw values (nil meaning absent) are equal as
// JSON values, ignoring formatting and key order.
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var va, vb any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

// mergeJSON carries the changes that turned base into theirs over to ours,
// top-level field by field: a field theirs left as in base keeps its value
// in ours; a field ours left as in base takes theirs's value; a field both
// changed to the same value keeps it; a field both changed differently is a
// clash, and its name is returned in clashes. Fields keep ours's order, and
// fields new in theirs follow in theirs's order. The error says why the
// three could not be merged at all (one is not a JSON object).
func mergeJSON(base, ours, theirs string) (merged string, clashes []string, err error) {
	var objs [3]object
	for i, s := range []string{base, ours, theirs} {
		o, err := parseObject(s)
		if err != nil {
			name := [...]string{"the base revision", "the current revision", "the edited content"}[i]
			return "", nil, fmt.Errorf("%s is %s", name, describeJSONErr(err))
		}
		objs[i] = o
	}
	b, o, t := objs[0], objs[1], objs[2]
	out := object{fields: map[string]json.RawMessage{}}
	set := func(k string, v json.RawMessage) {
		if v == nil {
			return
		}
		if _, ok := out.fields[k]; !ok {
			out.keys = append(out.keys, k)
		}
		out.fields[k] = v
	}
	for _, k := range unionKeys(o.keys, t.keys, b.keys) {
		bv, ov, tv := b.fields[k], o.fields[k], t.fields[k]
		switch {
		case sameJSON(tv, bv): // theirs did not touch k
			set(k, ov)
		case sameJSON(ov, bv): // ours did not touch k
			set(k, tv)
		case sameJSON(ov, tv): // both made the same change
			set(k, ov)
		default:
			clashes = append(clashes, k)
		}
	}
	if len(clashes) > 0 {
		slices.Sort(clashes)
		return "", clashes, nil
	}
	return out.encode(), nil, nil
}

func unionKeys(lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, k := range l {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

func describeJSONErr(err error) string {
	if errors.Is(err, errNotObject) {
		return "not a JSON object"
	}
	return "not valid JSON: " + err.Error()
}
