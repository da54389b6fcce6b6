package eval_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/eval"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/workflows"
	"github.com/tmc/langchaingo/llms"
)

// staticModels serves m on every tier.
func staticModels(t testing.TB, m llms.Model) *llm.Models {
	t.Helper()
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: m, Profile: llm.Profile{Model: "scripted"}}})
	require.NoError(t, err)
	return ms
}

// answers is a scripted model that answers a prompt holding a key with
// its value, and anything else with "I do not know."
func answers(kv map[string]string) *scripted.Model {
	var rules []scripted.Rule
	for k, v := range kv {
		rules = append(rules, scripted.Rule{PromptContains: k, Reply: scripted.Reply{Text: v}})
	}
	return scripted.New(scripted.Script{Rules: rules, Default: &scripted.Reply{Text: "I do not know."}})
}

// workflow loads testdata/echo.yaml compiled on model m.
func workflow(t testing.TB, m *llm.Models) (*workflows.File, *graph.Runnable) {
	t.Helper()
	f, err := workflows.Load("testdata/echo.yaml")
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Models: m, Getenv: func(string) string { return "" },
		Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	return f, r
}

func benchWorkflow(b *testing.B, m llms.Model) (*workflows.File, *graph.Runnable) {
	return workflow(b, staticModels(b, m))
}

func benchDataset(b *testing.B, f *workflows.File) *eval.Dataset {
	text := "graders: [{regex: '^ok$'}, {expr: 'len(state.answer) == 2'}]\n" + strings.SplitN(manyCases(100), "\n", 2)[1]
	return dataset(b, f, "bench.yaml", text)
}

func budgetOf(tokens int) llm.Budget { return llm.Budget{Tokens: tokens} }

// dataset writes text to a file named name and loads it for f.
func dataset(t testing.TB, f *workflows.File, name, text string) *eval.Dataset {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(strings.TrimLeft(text, "\n")), 0o600))
	ds, err := eval.Load(path, f)
	require.NoError(t, err)
	return ds
}
