package workflows

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/expr-lang/expr/vm"

	"github.com/coorflow/coorflow/graph"
)

// A node's set section writes computed values to channels:
//
//	set: {revisions: "state.revisions + 1", done: true}
//
// Each value is an expression (a YAML number or boolean is that literal),
// evaluated on the state the node saw when its step began (never on what
// the node or others write in that step), once the node has finished
// without error. The values are written as part of the node's update,
// through the channel's reducer (with sum, the value is added), and are
// checked against the channel's type: when the file loads for the
// expression's type, when the node runs for its value.

// setter is one entry of a set section.
type setter struct {
	ch   *channel
	src  string
	prog *vm.Program
}

// checkSet compiles the set section of node n.
func (f *File) checkSet(ps *problems, n *fileNode) {
	n.set = f.setters(ps, n.Ptr+"/set", n.Spec.Set, func(c *channel) string {
		if c == n.output {
			return fmt.Sprintf("node %q writes channel %q itself (output); set cannot write it too", n.Name, c.name)
		}
		return ""
	})
}

// anyChannel refuses no channel to a set section.
func anyChannel(*channel) string { return "" }

// setters compiles the set section at ptr; refuse says why a channel may
// not be written there, or "".
func (f *File) setters(ps *problems, ptr string, set map[string]string, refuse func(*channel) string) []setter {
	var out []setter
	for _, name := range sortedKeys(set) {
		p := ptr + "/" + escapePointer(name)
		c := f.channelRef(ps, p, name)
		if c == nil {
			continue
		}
		l := f.doc.loc(p)
		if why := refuse(c); why != "" {
			ps.at(l.key, l.path, "%s", why)
			continue
		}
		src := set[name]
		prog, err := f.scope.compile(f.doc, src, f.doc.node(p), false)
		if err != nil {
			ps.at(err.pos, l.path, "bad expression: %s", err.msg)
			continue
		}
		if msg := assignable(c, prog.Node().Type()); msg != "" {
			ps.at(l.val, l.path, "%q is %s, but channel %s takes %s", src, msg, name, c.takes())
			continue
		}
		out = append(out, setter{ch: c, src: src, prog: prog})
	}
	return out
}

// assignable says what is wrong with writing a value of type t to c, or
// "" when it fits or its type is known only when it runs.
func assignable(c *channel, t reflect.Type) string {
	if t == nil || t.Kind() == reflect.Interface {
		return ""
	}
	fits := func(kind string) bool {
		switch kind {
		case "any":
			return true
		case "string":
			return t.Kind() == reflect.String
		case "boolean":
			return t.Kind() == reflect.Bool
		case "number":
			return isInt(t) || isFloat(t)
		case "integer":
			return isInt(t)
		case "array":
			return t.Kind() == reflect.Slice || t.Kind() == reflect.Array
		case "object":
			return t.Kind() == reflect.Map || t.Kind() == reflect.Struct
		}
		return true
	}
	if fits(c.shape.kind) || (c.listReducer() && c.shape.items != nil && fits(c.shape.items.kind)) {
		return ""
	}
	if c.shape.kind == "integer" && isFloat(t) {
		return "a number with a fraction (convert it with int(...))"
	}
	return typeWord(t)
}

func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func isFloat(t reflect.Type) bool { return t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64 }

// typeWord names an expression's type for a person.
func typeWord(t reflect.Type) string {
	switch {
	case t.Kind() == reflect.String:
		return "text"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case isInt(t):
		return "a whole number"
	case isFloat(t):
		return "a number"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "a list"
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct:
		return "a map"
	}
	return t.String()
}

// kindWords name the kinds of shapes for a person.
var kindWords = map[string]string{
	"string": "text", "boolean": "true or false", "number": "a number", "integer": "a whole number",
	"array": "a list", "object": "a map",
}

// takes names what a channel takes, for a person.
func (c *channel) takes() string {
	word := kindWords[c.shape.kind]
	if c.listReducer() && c.shape.items != nil && c.shape.items.kind != "any" {
		word += " (or one item: " + kindWords[c.shape.items.kind] + ")"
	}
	return word
}

// withSet makes node n write its set section along with its own update.
func (b *build) withSet(n *fileNode, fn graph.NodeFunc) graph.NodeFunc {
	if len(n.set) == 0 {
		return fn
	}
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		cmd, err := fn(ctx, s)
		if err != nil {
			return cmd, err
		}
		for _, st := range n.set {
			for _, w := range cmd.Update {
				if w.Channel() == st.ch.name && st.ch.reducer == "last" {
					return graph.Command{}, fmt.Errorf("workflows: node %q: set writes channel %s, which the node wrote itself", n.Name, st.ch.name)
				}
			}
		}
		ws, err := b.setWrites(ctx, n.Name, n.set, s)
		if err != nil {
			return graph.Command{}, err
		}
		cmd.Update = append(slices.Clip(cmd.Update), ws...)
		return cmd, nil
	}
}

// setWrites evaluates a set section on s, for node (a node, or the step
// of an edge).
func (b *build) setWrites(ctx context.Context, node string, set []setter, s graph.State) ([]graph.Write, error) {
	ws := make([]graph.Write, 0, len(set))
	for _, st := range set {
		v, err := b.f.scope.eval(ctx, st.prog, s)
		if err != nil {
			return nil, fmt.Errorf("workflows: node %q: set %s: %q: %w", node, st.ch.name, st.src, err)
		}
		w, err := b.write(node, st.ch, v)
		if err != nil {
			return nil, fmt.Errorf("%w (set %s: %q)", err, st.ch.name, st.src)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// edgeStep is the name of the step an edge with a set section takes:
// the edge's set is written there, then the run goes on to its target.
func edgeStep(from, to string, n int) string {
	name := from + "->" + to
	if n > 1 {
		name += fmt.Sprintf("#%d", n)
	}
	return name
}

// addSetStep adds the step of an edge from from to to with set section
// set, and returns its name.
func (b *build) addSetStep(g *graph.Graph, from, to string, set []setter) string {
	b.edgeSteps[from+"\x00"+to]++
	name := edgeStep(from, to, b.edgeSteps[from+"\x00"+to])
	g.AddNode(name, func(ctx context.Context, s graph.State) (graph.Command, error) {
		ws, err := b.setWrites(ctx, name, set, s)
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(ws...), nil
	})
	g.AddEdge(name, graphName(to))
	return name
}
