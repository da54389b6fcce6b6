package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/workflows"
)

// echoTools is a Go tool that returns its text argument.
func echoTools(t *testing.T) *tools.Registry {
	t.Helper()
	schema := json.RawMessage(`{"type":"object","properties":{"text":{}}}`)
	reg, err := tools.NewRegistry(tools.Func("echo", "Returns its text.", schema, func(ctx context.Context, args json.RawMessage) (string, error) {
		var a struct{ Text any }
		if err := json.Unmarshal(args, &a); err != nil {
			return "", err
		}
		if s, ok := a.Text.(string); ok {
			return s, nil
		}
		b, err := json.Marshal(a.Text)
		return string(b), err
	}))
	require.NoError(t, err)
	return reg
}

// exprWorkflow is a workflow that evaluates src where: "argument" (a tool
// node's argument), "condition" (a router's route) or "template" (an llm
// node's prompt). Its input is the channel s.
func exprWorkflow(where, src string) string {
	head := "apiVersion: coorflow/v1\nname: e\ninput: s\noutput: out\nstate:\n  s: {type: string}\n  out: {type: string}\n"
	switch where {
	case "condition":
		return head + fmt.Sprintf(`nodes:
  r:
    type: router
    routes:
      - {when: '%s', to: end}
      - {to: end}
edges:
  - {from: start, to: r}
`, src)
	case "template":
		return head + fmt.Sprintf(`nodes:
  w: {type: llm, prompt: '{{ %s }}', output: out}
edges:
  - {from: start, to: w}
  - {from: w, to: end}
`, src)
	}
	return head + fmt.Sprintf(`tools:
  echo: {}
nodes:
  t: {type: tool, tool: echo, args: {text: '%s'}, output: out}
edges:
  - {from: start, to: t}
  - {from: t, to: end}
`, src)
}

// evalIn runs src where the workflow puts it, on input s, and returns
// the run's out channel, or its error.
func evalIn(t *testing.T, where, src, s string) (any, error) {
	t.Helper()
	f, err := workflows.Parse("e.yaml", []byte(exprWorkflow(where, src)), workflows.WithTools(echoTools(t)))
	require.NoError(t, err)
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"w": {{Text: "ok"}}}})
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model, Profile: llm.Profile{Model: "m"}}})
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms})
	require.NoError(t, err)
	in, err := f.Input(r, "s", s)
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), in, graph.StepLimit(10))
	if err != nil {
		return nil, err
	}
	out, _ := res.State.Value("out")
	return out, nil
}

// TestExpressionsThatWouldBuildTooMuchFailWithinTheBudget holds finding
// 4 of issue 11: expr's builtins that build text, and the + of strings,
// allocated before expr's memory budget was charged (repeat("x", 1e6) of
// a long text ran the process out of memory, and validate accepted the
// file). Each case below builds about 10^11 bytes or more from a 1 MiB
// input; each now fails with ErrExpressionBudget before building it.
func TestExpressionsThatWouldBuildTooMuchFailWithinTheBudget(t *testing.T) {
	mib := strings.Repeat("a", 1<<20)
	refs := "r" + strings.Repeat(", r", 99)
	doubling := "let a0 = state.s; "
	for i := 1; i <= 20; i++ {
		doubling += fmt.Sprintf("let a%d = a%d + a%d; ", i, i-1, i-1)
	}
	cases := []struct{ name, where, src string }{
		{"repeat", "argument", `repeat(state.s, 1000000)`},
		{"repeat in a condition", "condition", `len(repeat(state.s, 1000000)) > 0`},
		{"join", "argument", `join(map(1..400000, state.s), ",")`},
		{"replace", "argument", `replace(state.s, "", state.s)`},
		{"toJSON", "argument", `len(toJSON(map(1..400000, state.s)))`},
		{"string", "argument", `len(string(map(1..400000, state.s)))`},
		{"upper in a loop", "argument", `len(map(1..400000, upper(state.s)))`},
		{"lower in a loop", "argument", `len(map(1..400000, lower(state.s)))`},
		{"split in a loop", "argument", `len(map(1..1000, split(state.s, "")))`},
		{"toBase64 in a loop", "argument", `len(map(1..400000, toBase64(state.s)))`},
		{"+ of strings", "argument", doubling + `len(a20)`},
		{"+ of values typed at run time", "argument", `let o = fromJSON("{\"t\": \"" + repeat("b", 1000000) + "\"}"); len(reduce(1..400000, #acc + o.t, ""))`},
		{"concat", "argument", `let r = 1..900000; len(concat(` + refs + `))`},
		{"flatten", "argument", `let r = 1..900000; len(flatten([` + refs + `]))`},
		{"a value of many references", "argument", `map(1..400000, state.s)`},
		{"a template of many references", "template", `map(1..400000, state.s)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := evalIn(t, c.where, c.src, mib)
			require.ErrorIs(t, err, workflows.ErrExpressionBudget)
			assert.ErrorContains(t, err, "the expression builds more than 16 MiB of text and lists, the limit of one evaluation")
		})
	}
}

// TestExpressionsBuildWhatTheyNeedWithinTheBudget shows the metered
// builtins and + behave as expr's own within the budget.
func TestExpressionsBuildWhatTheyNeedWithinTheBudget(t *testing.T) {
	cases := []struct{ src, want string }{
		{`repeat("ab", 3)`, "ababab"},
		{`join(["a", "b", state.s], "-")`, "a-b-in"},
		{`join(split("x,y,z", ","))`, "xyz"},
		{`splitAfter("x,y", ",")[0] + splitAfter("x,y,z", ",", 2)[1]`, "x,y,z"},
		{`replace("a.b.c", ".", "/") + replace("a.b.c", ".", "/", 1)`, "a/b/ca/b.c"},
		{`upper(state.s) + lower("ABC")`, "INabc"},
		{`toJSON({"a": [1, 2]})`, "{\n  \"a\": [\n    1,\n    2\n  ]\n}"},
		{`string(42) + string([1, "x"]) + string(state.s)`, "42[1 x]in"},
		{`fromBase64(toBase64(state.s))`, "in"},
		{`fromJSON("{\"k\": \"v\"}").k`, "v"},
		{`join(sort(keys({"b": 1, "a": 2})))`, "ab"},
		{`string(len(values({"a": 1})) + len(uniq([1, 1, 2])) + len(toPairs({"a": 1})) + len(fromPairs([["a", 1]])))`, "5"},
		{`string(concat([1], [2, 3])) + string(flatten([[1], [2, [3]]]))`, "[1 2 3][1 2 3]"},
		{`state.s + "-" + string(1 + 2) + "-" + fromJSON("{\"t\": \"x\"}").t + "y"`, "in-3-xy"},
		{`len(1..100000) > 0 ? "range" : "none"`, "range"},
	}
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			out, err := evalIn(t, "argument", c.src, "in")
			require.NoError(t, err)
			assert.Equal(t, c.want, out)
		})
	}
}

// TestExpressionsThatCannotRunWithinTheBudgetAreProblemsWhenTheFileLoads
// shows what validate now refuses: a repeat whose constant arguments
// build more than the budget, and groupBy, which builds a map of its
// whole list without a budget. expr's own range budget holds at run time.
func TestExpressionsThatCannotRunWithinTheBudgetAreProblemsWhenTheFileLoads(t *testing.T) {
	cases := []struct{ where, src, want string }{
		{"argument", `repeat("x", 100000000)`,
			"e.yaml:11:45: nodes.t.args.text: bad expression: repeat builds 100000000 × 1 bytes, more than the 16 MiB an expression may build"},
		{"template", `repeat("ab", 10000000)`,
			"e.yaml:9:30: nodes.w.prompt: bad expression in template: repeat builds 10000000 × 2 bytes, more than the 16 MiB an expression may build"},
		{"condition", `len(groupBy(1..10, # % 2)) > 1`,
			"e.yaml:12:21: nodes.r.routes[0].when: bad condition: groupBy is not available in workflow expressions: it builds a map of the whole list each time it runs; use filter"},
	}
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			assert.Equal(t, []string{c.want}, parseProblems(t, "e.yaml", []byte(exprWorkflow(c.where, c.src)), workflows.WithTools(echoTools(t))))
		})
	}
	_, err := evalIn(t, "argument", `len(1..1000000000)`, "in")
	assert.ErrorContains(t, err, "memory budget exceeded")
}

// TestExpressionStepsAreBounded holds finding 8 of issue 26: an
// expression of 2.7e7 steps ran for seconds, past its node's timeout,
// with nothing to bound it. The bodies of its predicates may now run at
// most 1,000,000 times in one evaluation.
func TestExpressionStepsAreBounded(t *testing.T) {
	const cube = `let r = 1..300; all(r, {all(r, {all(r, {# > 0})})})`
	for _, where := range []string{"argument", "condition", "template"} {
		t.Run(where, func(t *testing.T) {
			_, err := evalIn(t, where, cube, "in")
			require.ErrorIs(t, err, workflows.ErrExpressionSteps)
			assert.ErrorContains(t, err, "the expression runs the body of its predicates more than 1000000 times, the limit of one evaluation")
		})
	}
	out, err := evalIn(t, "argument", `let r = 1..900; string(all(r, {all(r, {# > 0})}))`, "in")
	require.NoError(t, err, "810,000 steps are within the budget")
	assert.Equal(t, "true", out)
}
