package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/coorflow/coorflow/graph"
)

// channel is a channel of a file's graph: a prebuilt one (a typed key of
// package nodes, builtin) or one the file declares (a dynamic key).
type channel struct {
	name    string
	reducer string
	shape   *shape
	key     graph.Channel
	builtin bool
	// schema validates the values written to a declared channel.
	schema *jsonschema.Schema
	// schemaJSON is the declared schema, for structured model output.
	schemaJSON []byte
}

var channelName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reducerKinds says which JSON type each reducer needs.
var reducerKinds = map[string][]string{
	"append":   {"array"},
	"messages": {"array"},
	"merge":    {"object"},
	"sum":      {"number", "integer"},
}

// declareChannel checks a declared channel and returns it, or nil for
// one named like a prebuilt channel (prebuilt holds them by name): the
// file's graph has that one; kinds are the file's node types.
func declareChannel(ps *problems, d *document, c named[channelSpec], prebuilt map[string]*channel, kinds []string) *channel {
	l := d.loc(c.Ptr)
	reducer := c.Spec.Reducer
	if reducer == "" {
		reducer = "last"
	}
	if !channelName.MatchString(c.Name) {
		ps.at(l.key, l.path, "channel name %q must start with a letter or _ and hold only letters, digits and _, so that expressions can read it as state.<name>", c.Name)
		return nil
	}
	sh := shapeOfSchema(c.Spec.Schema)
	if b, ok := prebuilt[c.Name]; ok {
		if !fitsPrebuilt(c, b) {
			ps.at(l.key, l.path, "channel %q is prebuilt for node type %s, with type %s and reducer %s; this declaration says type %s and reducer %s: match the prebuilt channel, or name yours otherwise",
				c.Name, orList(slices.DeleteFunc(kindsWith(c.Name), func(k string) bool { return !slices.Contains(kinds, k) })), b.shape.kind, b.reducer, sh.kind, reducer)
		}
		return nil
	}
	if want, ok := reducerKinds[reducer]; ok && sh.kind != "any" && !contains(want, sh.kind) {
		rl := d.loc(c.Ptr + "/reducer")
		ps.at(rl.val, rl.path, "reducer %s needs a channel of type %s, but %s has type %s", reducer, strings.Join(want, " or "), c.Name, sh.kind)
		return nil
	}
	if sh.kind == "any" {
		switch reducer {
		case "append", "messages":
			sh = &shape{kind: "array", items: anyShape}
		case "merge":
			sh = &shape{kind: "object", open: true, props: map[string]*shape{}}
		case "sum":
			sh = &shape{kind: "number"}
		}
	}
	key, err := graph.NewDynamicKey(c.Name, reducer)
	if err != nil {
		ps.at(l.key, l.path, "%v", err)
		return nil
	}
	raw, _ := json.Marshal(c.Spec.Schema)
	comp := jsonschema.NewCompiler()
	comp.Draft = jsonschema.Draft2020
	url := "mem://state/" + c.Name
	var schema *jsonschema.Schema
	if err = comp.AddResource(url, bytes.NewReader(raw)); err == nil {
		schema, err = comp.Compile(url)
	}
	if err != nil {
		ps.at(l.key, l.path, "the channel's schema does not compile: %v", err)
		return nil
	}
	return &channel{name: c.Name, reducer: reducer, shape: sh, key: key, schema: schema, schemaJSON: raw}
}

// fitsPrebuilt reports whether the declaration c says what the prebuilt
// channel b is: its type (or none) and its reducer.
func fitsPrebuilt(c named[channelSpec], b *channel) bool {
	reducer := c.Spec.Reducer
	if reducer == "" {
		reducer = "last"
	}
	sh := shapeOfSchema(c.Spec.Schema)
	return (sh.kind == "any" || sh.kind == b.shape.kind) && reducer == b.reducer
}

// listReducer reports whether a write to the channel may be one item of
// its list (reducers append and messages).
func (c *channel) listReducer() bool { return c.reducer == "append" || c.reducer == "messages" }

// check validates a value written to the channel (the item, for append).
func (c *channel) check(v any) error {
	if c.schema == nil {
		return nil
	}
	g, err := generic(v)
	if err != nil {
		return err
	}
	target := g
	if c.listReducer() {
		if _, isList := g.([]any); !isList {
			target = []any{g}
		}
	}
	if err := c.schema.Validate(target); err != nil {
		return fmt.Errorf("channel %q: %s", c.name, schemaMessage(err))
	}
	return nil
}

// schemaMessage is the first leaf of a validation error, in words.
func schemaMessage(err error) string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err.Error()
	}
	leaf := leaves(ve)[0]
	if leaf.InstanceLocation == "" {
		return leaf.Message
	}
	return leaf.InstanceLocation + ": " + leaf.Message
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
