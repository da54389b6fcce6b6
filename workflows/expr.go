package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"

	"github.com/coorflow/coorflow/graph"
)

// scope is what expressions of one file see: state (its channels) and
// config (its config section), with their types.
type scope struct {
	channels []*channel
	config   map[string]any
	types    types.Map
}

func newScope(chs []*channel, config map[string]any) *scope {
	st := types.Map{}
	for _, c := range chs {
		st[c.name] = c.shape.exprType()
	}
	ct := types.Map{}
	for k, v := range config {
		ct[k] = shapeOfValue(v).exprType()
	}
	env := types.Map{"state": st, "config": ct}
	maps.Copy(env, meteredTypes)
	return &scope{channels: chs, config: config, types: env}
}

// env builds the values an expression runs on from a state and the run
// of ctx (its config), with the functions that charge what they build to
// m.
func (sc *scope) env(ctx context.Context, s graph.State, m *meter) (map[string]any, error) {
	config, err := sc.configValues(ctx)
	if err != nil {
		return nil, err
	}
	st := make(map[string]any, len(sc.channels))
	for _, c := range sc.channels {
		v, ok := s.Value(c.name)
		if !ok {
			st[c.name] = c.shape.zero()
			continue
		}
		g, err := generic(v)
		if err != nil {
			return nil, err
		}
		st[c.name] = c.shape.normalize(g)
	}
	env := make(map[string]any, len(meteredFuncs)+2)
	env["state"], env["config"] = st, config
	bindFuncs(env, m)
	return env, nil
}

// exprError is an expression that does not compile, located in the file.
type exprError struct {
	pos position
	msg string
}

// compileExpr compiles src against the scope's types, with the + of
// strings metered and what workflow expressions may not do refused.
func (sc *scope) compileExpr(src string, asBool bool) (*vm.Program, error) {
	g := &guard{}
	opts := []expr.Option{expr.Env(sc.types), expr.Patch(concatPatch{}), expr.Patch(stepPatch{}), expr.Patch(g)}
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	p, err := expr.Compile(src, opts...)
	if err == nil && g.err != nil {
		return nil, g.err.Bind(file.NewSource(src))
	}
	return p, err
}

// compile compiles src, written at value node n of d; asBool asks for a
// condition.
func (sc *scope) compile(d *document, src string, n *yaml.Node, asBool bool) (*vm.Program, *exprError) {
	p, err := sc.compileExpr(src, asBool)
	if err == nil {
		return p, nil
	}
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		return nil, &exprError{pos: d.textPos(n, max(fe.Line, 1)-1, fe.Column), msg: sc.explain(src, fe.Message)}
	}
	if i := strings.IndexByte(msg, '\n'); i > 0 {
		msg = msg[:i]
	}
	return nil, &exprError{pos: d.textPos(n, 0, 0), msg: msg}
}

// evalBool runs a condition, until ctx ends.
func (sc *scope) evalBool(ctx context.Context, p *vm.Program, s graph.State) (bool, error) {
	env, err := sc.env(ctx, s, newMeter(ctx))
	if err != nil {
		return false, err
	}
	out, err := runProgram(p, env)
	if err != nil {
		return false, err
	}
	b, _ := out.(bool)
	return b, nil
}

// eval runs an expression. Its value counts against the evaluation's
// budget as JSON, the form it leaves in.
func (sc *scope) eval(ctx context.Context, p *vm.Program, s graph.State) (any, error) {
	m := newMeter(ctx)
	env, err := sc.env(ctx, s, m)
	if err != nil {
		return nil, err
	}
	out, err := runProgram(p, env)
	if err != nil {
		return nil, err
	}
	if err := m.charge(encodedLen(out, false, m.left)); err != nil {
		return nil, err
	}
	return out, nil
}

// template is a text with {{ expression }} placeholders.
type template struct {
	parts []templatePart
}

type templatePart struct {
	text string
	prog *vm.Program
}

// compileTemplate splits text, written at value node n of d, into
// literal parts and expressions.
func (sc *scope) compileTemplate(d *document, text string, n *yaml.Node) (*template, *exprError) {
	t := &template{}
	at := func(off int, msg string) *exprError {
		line := strings.Count(text[:off], "\n")
		col := off - (strings.LastIndexByte(text[:off], '\n') + 1)
		return &exprError{pos: d.textPos(n, line, col), msg: msg}
	}
	rest, off := text, 0
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.parts = append(t.parts, templatePart{text: rest})
			return t, nil
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return nil, at(off+i, "{{ is not closed with }}")
		}
		t.parts = append(t.parts, templatePart{text: rest[:i]})
		src := rest[i+2 : i+j]
		p, err := sc.compileExpr(strings.TrimSpace(src), false)
		if err != nil {
			lead := len(src) - len(strings.TrimLeft(src, " \t"))
			col := 0
			var fe *file.Error
			if errors.As(err, &fe) && fe.Line <= 1 {
				col = fe.Column
			}
			return nil, at(off+i+2+lead+col, sc.explain(src, errMessage(err)))
		}
		t.parts = append(t.parts, templatePart{prog: p})
		off += i + j + 2
		rest = rest[i+j+2:]
	}
}

// explain adds to an unknown-field message what the names could be.
func (sc *scope) explain(src, msg string) string {
	name, ok := strings.CutPrefix(msg, "unknown field ")
	if !ok {
		return msg
	}
	if why, ok := missingPrebuilt(name); ok && readsState(src, name) {
		return msg + ": " + why
	}
	var names []string
	for _, c := range sc.channels {
		names = append(names, c.name)
	}
	if hint := suggest(name, names, ""); hint != "" {
		return msg + hint
	}
	if strings.Contains(src, "state."+name) {
		return msg + ": the file declares no channel " + name + " (declare it under state)"
	}
	return msg
}

func errMessage(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		return fe.Message
	}
	return err.Error()
}

// render fills the template from the state: strings as they are, other
// values as JSON. The text it adds counts against one evaluation's
// budget, shared by its expressions.
func (t *template) render(ctx context.Context, sc *scope, s graph.State) (string, error) {
	if t == nil {
		return "", nil
	}
	var env map[string]any
	m := newMeter(ctx)
	var b strings.Builder
	for _, p := range t.parts {
		if p.prog == nil {
			b.WriteString(p.text)
			continue
		}
		if env == nil {
			var err error
			if env, err = sc.env(ctx, s, m); err != nil {
				return "", err
			}
		}
		out, err := runProgram(p.prog, env)
		if err != nil {
			return "", err
		}
		if err := m.charge(renderedLen(out, m.left)); err != nil {
			return "", err
		}
		b.WriteString(text(out))
	}
	return b.String(), nil
}

// renderedLen is, at most, the length of text(v), estimated up to limit.
func renderedLen(v any, limit int) int {
	if s, ok := v.(string); ok {
		return len(s)
	}
	return encodedLen(v, false, limit)
}

// text renders a value for a prompt.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case fmt.Stringer:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
