package workflows

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// Limits of one evaluation of an expression (a condition, an argument, a
// template). expr charges the lists and maps it builds to a budget of
// elements, but its builtins that build strings (repeat, join, replace,
// toJSON...) and the + of strings allocate without it: repeat(s, 1e6) of
// a long s, or a join of a million references to one long text, ran the
// process out of memory. Those builtins are replaced by versions that
// charge what they build to a budget of bytes before building it.
const (
	// exprByteBudget is how many bytes of text and lists one evaluation
	// may build.
	exprByteBudget = 16 << 20
	// exprElementBudget is expr's own budget: the elements of the
	// lists, ranges and maps one evaluation may build.
	exprElementBudget = 1_000_000
	// exprStepBudget is how many times one evaluation may run the body
	// of a predicate (of all, filter, map, reduce, sortBy...), where
	// its time goes: expr has no bound on time of its own.
	exprStepBudget = 1_000_000
	// exprCheckEvery is how often, in steps, an evaluation looks whether
	// its context was cancelled (the node's timeout, a cancelled run).
	exprCheckEvery = 64
)

// ErrExpressionSteps: an expression ran the bodies of its predicates
// more often than an evaluation may.
var ErrExpressionSteps = fmt.Errorf("workflows: the expression runs the body of its predicates more than %d times, the limit of one evaluation", exprStepBudget)

// ErrExpressionBudget: an expression built more than an evaluation may.
var ErrExpressionBudget = errors.New("workflows: the expression builds more than 16 MiB of text and lists, the limit of one evaluation")

// meter is what one evaluation may still build, in bytes, and how many
// steps it may still take before ctx ends. An evaluation runs on one
// goroutine.
type meter struct {
	left  int
	steps int
	ctx   context.Context
}

func newMeter(ctx context.Context) *meter {
	return &meter{left: exprByteBudget, steps: exprStepBudget, ctx: ctx}
}

// step counts one step of the evaluation, and stops it when the budget
// of steps is spent or its context ended.
func (m *meter) step() (bool, error) {
	m.steps--
	if m.steps < 0 {
		return false, ErrExpressionSteps
	}
	if m.steps%exprCheckEvery == 0 {
		if err := context.Cause(m.ctx); err != nil {
			return false, fmt.Errorf("workflows: the evaluation was stopped: %w", err)
		}
	}
	return true, nil
}

// charge takes n bytes from the meter, or fails when fewer are left.
func (m *meter) charge(n int) error {
	if n < 0 || n > m.left {
		m.left = 0
		return ErrExpressionBudget
	}
	m.left -= n
	return nil
}

// meteredFuncs are the builtins of expr that build text or lists, each
// as a function of the evaluation's meter that charges what it builds
// before building it. They take the builtins' names in the environment of
// expressions, which overrides the builtins.
var meteredFuncs = map[string]func(m *meter) any{
	"repeat": func(m *meter) any {
		return func(s string, n int) (string, error) {
			if n < 0 {
				return "", fmt.Errorf("invalid argument for repeat (expected positive integer, got %d)", n)
			}
			return charged(m, product(len(s), n), func() (string, error) { return strings.Repeat(s, n), nil })
		}
	},
	"join": func(m *meter) any {
		return func(list any, glue ...string) (string, error) {
			return charged(m, joinedLen(list, glue), func() (string, error) { return callString("join", append([]any{list}, anys(glue)...)...) })
		}
	},
	"replace": func(m *meter) any {
		return func(s, old, repl string, n ...int) (string, error) {
			count := strings.Count(s, old)
			if len(n) > 0 && n[0] >= 0 {
				count = min(count, n[0])
			}
			size := len(s) + product(count, max(len(repl)-len(old), 0))
			return charged(m, size, func() (string, error) { return callString("replace", append([]any{s, old, repl}, anys(n)...)...) })
		}
	},
	"split":      func(m *meter) any { return splitter(m, "split") },
	"splitAfter": func(m *meter) any { return splitter(m, "splitAfter") },
	"upper":      func(m *meter) any { return stringFunc(m, "upper", 1) },
	"lower":      func(m *meter) any { return stringFunc(m, "lower", 1) },
	"toBase64":   func(m *meter) any { return stringFunc(m, "toBase64", 2) },
	"fromBase64": func(m *meter) any { return stringFunc(m, "fromBase64", 1) },
	"fromJSON": func(m *meter) any {
		return func(s string) (any, error) {
			return charged(m, product(len(s), 8), func() (any, error) { return callBuiltin("fromJSON", s) })
		}
	},
	"toJSON": func(m *meter) any {
		return func(v any) (string, error) {
			return charged(m, encodedLen(v, true, m.left), func() (string, error) { return callString("toJSON", v) })
		}
	},
	"string": func(m *meter) any {
		return func(v any) (string, error) {
			if s, ok := v.(string); ok {
				return s, nil
			}
			return charged(m, encodedLen(v, false, m.left), func() (string, error) { return callString("string", v) })
		}
	},
	"keys":      func(m *meter) any { return listFunc(m, "keys", 16) },
	"values":    func(m *meter) any { return listFunc(m, "values", 16) },
	"uniq":      func(m *meter) any { return listFunc(m, "uniq", 16) },
	"toPairs":   func(m *meter) any { return listFunc(m, "toPairs", 64) },
	"fromPairs": func(m *meter) any { return listFunc(m, "fromPairs", 64) },
	"flatten": func(m *meter) any {
		return func(list any) (any, error) {
			return charged(m, product(listItems(reflect.ValueOf(list), m.left/16+1), 16), func() (any, error) { return callBuiltin("flatten", list) })
		}
	},
	"concat": func(m *meter) any {
		return func(lists ...any) (any, error) {
			size := 0
			for _, l := range lists {
				size = sum(size, product(lenOf(l), 16))
			}
			return charged(m, size, func() (any, error) { return callBuiltin("concat", lists...) })
		}
	},
	// A step of the evaluation (stepName), which stepPatch puts at the
	// start of the body of every predicate. Its type is one expr calls
	// without reflection, at the cost of failing by a panic, which the
	// evaluation recovers as the error it returns.
	stepName: func(m *meter) any {
		return func() bool {
			if _, err := m.step(); err != nil {
				panic(err)
			}
			return true
		}
	},
	// The + of two strings (concatName) and of values whose types are
	// known only when the expression runs (addName); concatPatch puts
	// them in place of +.
	concatName: func(m *meter) any {
		return func(a, b string) (string, error) {
			return charged(m, sum(len(a), len(b)), func() (string, error) { return a + b, nil })
		}
	},
	addName: func(m *meter) any {
		return func(a, b any) (any, error) {
			if sa, ok := a.(string); ok {
				if sb, ok := b.(string); ok {
					return charged(m, sum(len(sa), len(sb)), func() (any, error) { return sa + sb, nil })
				}
			}
			return runtime.Add(a, b), nil
		}
	},
}

// The names of the functions that take the place of +, and of the one
// that counts steps.
const (
	concatName = "__concat"
	addName    = "__add"
	stepName   = "__step"
)

// stepPatch puts a call of stepName at the start of the body of every
// predicate, which runs once per element of the list it ranges over:
// there goes an evaluation's time, which the meter's steps bound and its
// context can stop.
type stepPatch struct{}

// Visit implements ast.Visitor.
func (stepPatch) Visit(node *ast.Node) {
	p, ok := (*node).(*ast.PredicateNode)
	if !ok {
		return
	}
	call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: stepName}}
	call.SetLocation(p.Location())
	seq := &ast.SequenceNode{Nodes: []ast.Node{call, p.Node}}
	seq.SetLocation(p.Node.Location())
	p.Node = seq
}

// meteredTypes are the types of the metered functions, for the checker.
var meteredTypes = func() types.Map {
	m := types.Map{}
	for name, fn := range meteredFuncs {
		m[name] = types.TypeOf(fn(nil))
	}
	return m
}()

// bindFuncs adds the metered functions of meter m to env.
func bindFuncs(env map[string]any, m *meter) {
	for name, fn := range meteredFuncs {
		env[name] = fn(m)
	}
}

// charged charges size to m, then builds.
func charged[T any](m *meter, size int, build func() (T, error)) (T, error) {
	if err := m.charge(size); err != nil {
		var zero T
		return zero, err
	}
	return build()
}

// stringFunc is the builtin name of one string argument, whose result is
// at most factor times as long.
func stringFunc(m *meter, name string, factor int) func(string) (string, error) {
	return func(s string) (string, error) {
		return charged(m, product(len(s), factor), func() (string, error) { return callString(name, s) })
	}
}

// splitter is split or splitAfter, charged for the pieces' headers.
func splitter(m *meter, name string) func(s, sep string, n ...int) ([]string, error) {
	return func(s, sep string, n ...int) ([]string, error) {
		pieces := strings.Count(s, sep) + 1
		if len(n) > 0 && n[0] >= 0 {
			pieces = min(pieces, n[0])
		}
		return charged(m, product(pieces, 16), func() ([]string, error) {
			out, err := callBuiltin(name, append([]any{s, sep}, anys(n)...)...)
			parts, _ := out.([]string)
			return parts, err
		})
	}
}

// listFunc is the builtin name of one list or map, charged perItem bytes
// for each of its items.
func listFunc(m *meter, name string, perItem int) func(any) (any, error) {
	return func(v any) (any, error) {
		return charged(m, product(lenOf(v), perItem), func() (any, error) { return callBuiltin(name, v) })
	}
}

// callBuiltin calls expr's own builtin name.
func callBuiltin(name string, args ...any) (any, error) {
	f := builtin.Builtins[builtin.Index[name]]
	switch {
	case f.Func != nil:
		return f.Func(args...)
	case f.Safe != nil:
		out, _, err := f.Safe(args...)
		return out, err
	case f.Fast != nil && len(args) == 1:
		return f.Fast(args[0]), nil
	}
	return nil, fmt.Errorf("invalid number of arguments for %s (got %d)", name, len(args))
}

func callString(name string, args ...any) (string, error) {
	out, err := callBuiltin(name, args...)
	s, _ := out.(string)
	return s, err
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// product and sum saturate instead of overflowing.
func product(a, b int) int {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

func sum(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// lenOf is the length of a list, map or string, 0 for anything else.
func lenOf(v any) int {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		return rv.Len()
	}
	return 0
}

// joinedLen is the length of join(list, glue...).
func joinedLen(list any, glue []string) int {
	g := 0
	if len(glue) > 0 {
		g = len(glue[0])
	}
	rv := reflect.ValueOf(list)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return 0
	}
	size := product(rv.Len(), g)
	for i := range rv.Len() {
		if s, ok := rv.Index(i).Interface().(string); ok {
			size = sum(size, len(s))
		}
	}
	return size
}

// listItems counts the items of a list and of the lists in it, up to limit.
func listItems(v reflect.Value, limit int) int {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return 1
	}
	n := 0
	for i := 0; i < v.Len() && n <= limit; i++ {
		n += listItems(v.Index(i), limit-n)
	}
	return n
}

// encodedLen estimates, from above, the length of v as JSON (indented
// like toJSON with indent) or as fmt prints it, stopping once it passes
// limit.
func encodedLen(v any, indent bool, limit int) int {
	z := sizer{limit: limit, indent: indent}
	z.walk(reflect.ValueOf(v), 0)
	return z.n
}

type sizer struct {
	n, limit int
	indent   bool
}

// maxWalkDepth stops the estimate of values nested deeper than JSON
// decoding would produce.
const maxWalkDepth = 10_000

var timeType = reflect.TypeFor[time.Time]()

func (z *sizer) add(k int) bool {
	z.n = sum(z.n, k)
	return z.n <= z.limit
}

// item adds what separates and indents an item at depth.
func (z *sizer) item(depth int) bool {
	if z.indent {
		return z.add(2 + 2*depth)
	}
	return z.add(1)
}

func (z *sizer) walk(v reflect.Value, depth int) bool {
	if z.n > z.limit || depth > maxWalkDepth {
		z.n = sum(z.limit, 1)
		return false
	}
	switch v.Kind() {
	case reflect.Invalid:
		return z.add(5)
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return z.add(5)
		}
		return z.walk(v.Elem(), depth)
	case reflect.String:
		return z.add(quotedLen(v.String()))
	case reflect.Slice, reflect.Array:
		if !z.add(2 + 2*depth) {
			return false
		}
		for i := range v.Len() {
			if !z.item(depth+1) || !z.walk(v.Index(i), depth+1) {
				return false
			}
		}
		return true
	case reflect.Map:
		if !z.add(4 + 2*depth) {
			return false
		}
		it := v.MapRange()
		for it.Next() {
			if !z.item(depth+1) || !z.walk(it.Key(), depth+1) || !z.add(2) || !z.walk(it.Value(), depth+1) {
				return false
			}
		}
		return true
	case reflect.Struct:
		if v.Type() == timeType {
			return z.add(64)
		}
		if !z.add(2 + 2*depth) {
			return false
		}
		for i := range v.NumField() {
			if !z.item(depth+1) || !z.add(len(v.Type().Field(i).Name)+4) || !z.walk(v.Field(i), depth+1) {
				return false
			}
		}
		return true
	}
	return z.add(32) // numbers, booleans and what JSON cannot encode
}

// quotedLen is the length of s quoted as encoding/json quotes it, at
// most.
func quotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029', r < 0x20, r == '<', r == '>', r == '&':
			n += 6
		case r == '"' || r == '\\':
			n += 2
		default:
			n += size
		}
		i += size
	}
	return n
}

// concatPatch puts the metered functions in place of the + of operands
// that may be strings: concatName when both are strings, addName when the
// type of one is known only at run time. The + of numbers and times,
// which builds nothing, stays.
type concatPatch struct{}

// Visit implements ast.Visitor.
func (concatPatch) Visit(node *ast.Node) {
	b, ok := (*node).(*ast.BinaryNode)
	if !ok || b.Operator != "+" {
		return
	}
	l, r := b.Left.Type(), b.Right.Type()
	if !stringOrUnknown(l) || !stringOrUnknown(r) {
		return
	}
	name := addName
	if l != nil && r != nil && l.Kind() == reflect.String && r.Kind() == reflect.String {
		name = concatName
	}
	call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: name}, Arguments: []ast.Node{b.Left, b.Right}}
	call.SetLocation(b.Location())
	ast.Patch(node, call)
}

func stringOrUnknown(t reflect.Type) bool {
	return t == nil || t.Kind() == reflect.String || t.Kind() == reflect.Interface
}

// guard finds, while an expression compiles, what a workflow expression
// may not do; Compile reports the first.
type guard struct {
	err *file.Error
}

// Visit implements ast.Visitor.
func (g *guard) Visit(node *ast.Node) {
	if g.err != nil {
		return
	}
	switch n := (*node).(type) {
	case *ast.BuiltinNode:
		if n.Name == "groupBy" {
			g.fail(n, "groupBy is not available in workflow expressions: it builds a map of the whole list each time it runs; use filter")
		}
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok || id.Value != "repeat" || len(n.Arguments) != 2 {
			return
		}
		s, okS := n.Arguments[0].(*ast.StringNode)
		count, okN := n.Arguments[1].(*ast.IntegerNode)
		if okS && okN && product(len(s.Value), count.Value) > exprByteBudget {
			g.fail(n, fmt.Sprintf("repeat builds %d × %d bytes, more than the %d MiB an expression may build", count.Value, len(s.Value), exprByteBudget>>20))
		}
	}
}

func (g *guard) fail(n ast.Node, msg string) {
	g.err = &file.Error{Location: n.Location(), Message: msg}
}

// runProgram runs a compiled expression within expr's element budget.
func runProgram(p *vm.Program, env map[string]any) (any, error) {
	machine := vm.VM{MemoryBudget: exprElementBudget}
	return machine.Run(p, env)
}
