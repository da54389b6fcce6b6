package workflows

import (
	"testing"
)

// FuzzCompileExpression compiles any text as a condition, an expression
// and a template against the built-in channels and a config section: it
// may fail, never panic, and the metered functions take the place of
// expr's builtins in what compiles. The seeds include the expressions
// that ran the process out of memory before (issue 11).
//
//	go test -run '^$' -fuzz=FuzzCompileExpression -fuzztime=5s ./workflows
func FuzzCompileExpression(f *testing.F) {
	for _, src := range []string{
		`repeat("x", 1000000)`,
		`repeat(state.input, 1000000)`,
		`repeat("x", 1e6)`,
		`join(map(1..400000, state.input), ",")`,
		`replace(state.input, "", state.input)`,
		`toJSON(map(1..400000, state.input))`,
		`let a = state.input + state.input; let b = a + a; len(b)`,
		`len(groupBy(1..10, # % 2)) > 1`,
		`1..1000000000`,
		`state.plan_iterations > config.max_steps and state.locale == "en-US"`,
		`{{ state.request }} and {{ join(state.findings, "\n") }}`,
		`upper(config.name) + 1`,
	} {
		f.Add(src)
	}
	sc := newScope(prebuiltChannels(func(string) bool { return true }), map[string]any{"max_steps": 3, "name": "n", "list": []any{1, "a"}})
	d := &document{}
	f.Fuzz(func(t *testing.T, src string) {
		for _, asBool := range []bool{false, true} {
			p, err := sc.compileExpr(src, asBool)
			if (p == nil) == (err == nil) {
				t.Fatalf("compile %q: program %v and error %v", src, p, err)
			}
		}
		if tmpl, err := sc.compileTemplate(d, src, nil); (tmpl == nil) == (err == nil) {
			t.Fatalf("template %q: %v and %v", src, tmpl, err)
		}
	})
}
