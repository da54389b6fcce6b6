package server_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/eval"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	smemory "github.com/coorflow/coorflow/store/memory"
	wfiles "github.com/coorflow/coorflow/workflows"
)

const echoWorkflow = `apiVersion: coorflow/v1
name: echo
input: question
output: answer
state:
  question: {type: string}
  answer: {type: string}
nodes:
  answer:
    type: llm
    prompt: "Answer: {{ state.question }}"
    output: answer
edges:
  - {from: start, to: answer}
  - {from: answer, to: end}
`

// evaluated serves a recorder and a store, and keeps in them an eval run
// of alice's: two cases, one passing and one failing, two runs each.
func evaluated(t *testing.T) (*env, *eval.Result) {
	t.Helper()
	rec, st := recorder(t), smemory.New(store.Config{})
	e := newEnv(t, server.Config{Workflows: workflows(calcGraph(t, nil)), Recorder: rec, Store: st})
	f, err := wfiles.Parse("echo.yaml", []byte(echoWorkflow))
	require.NoError(t, err)
	m := scripted.New(scripted.Script{Rules: []scripted.Rule{{PromptContains: "France", Reply: scripted.Reply{Text: "Paris"}}},
		Default: &scripted.Reply{Text: "I do not know"}})
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: m, Profile: llm.Profile{Model: "scripted"}}})
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), wfiles.Env{Models: ms, Getenv: func(string) string { return "" }, Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	dir := t.TempDir()
	ds, err := eval.Parse(filepath.Join(dir, "capitals.yaml"), []byte(`
cases:
  - {id: france, input: capital of France, graders: [{contains: Paris}]}
  - {id: peru, input: capital of Peru, graders: [{contains: Lima}]}
`), f)
	require.NoError(t, err)
	res, err := eval.Run(t.Context(), eval.Config{Label: "v1", File: f, Runnable: r, Workflow: "echo", Owner: "alice", Dataset: ds, Repeats: 2,
		Recorder: rec, Store: eval.NewDocStore(st, "alice")})
	require.NoError(t, err)
	return e, res
}

func TestTheEvalRunsOfAnOwnerAreServedToItAlone(t *testing.T) {
	e, res := evaluated(t)
	var list server.EvalRunList
	e.call("GET", "/v1/evals", alice, nil, http.StatusOK, &list)
	require.Len(t, list.Evals, 1)
	assert.Equal(t, res.ID, list.Evals[0].ID)
	assert.Equal(t, "v1", list.Evals[0].Label)
	e.call("GET", "/v1/evals", bob, nil, http.StatusOK, &list)
	assert.Empty(t, list.Evals)

	var got eval.Result
	e.call("GET", "/v1/evals/"+res.ID, alice, nil, http.StatusOK, &got)
	require.Len(t, got.Cases, 2)
	assert.Equal(t, 2, got.Cases[0].Passed)
	assert.Equal(t, 0, got.Cases[1].Passed)
	run := got.Cases[0].Trials[0].Runs[0]
	var info struct {
		Owner string `json:"owner"`
	}
	e.call("GET", "/v1/trace/runs/"+run, alice, nil, http.StatusOK, &info)
	assert.Equal(t, "alice", info.Owner, "each trial links to alice's recorded run")
	e.call("GET", "/v1/evals/"+res.ID, bob, nil, http.StatusNotFound, nil)
	e.call("GET", "/v1/evals/..%2f..%2fx", alice, nil, http.StatusNotFound, nil)
}

func TestViewerShowsAnEvalRunAsATableWhoseRowsOpenTheRunsInChromium(t *testing.T) {
	e, res := evaluated(t)
	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/#token="+alice),
		chromedp.WaitVisible(`#evals tr.eval-row[data-eval="`+res.ID+`"] a`),
		chromedp.Click(`#evals tr.eval-row[data-eval="`+res.ID+`"] a`),
		chromedp.WaitVisible(`#eval-table tbody[data-case="peru"] tr.trial-row`),
	))
	summary := text(t, ctx, "#eval-summary")
	peru := text(t, ctx, `#eval-table tbody[data-case="peru"] tr.trial-row`)
	france := text(t, ctx, `#eval-table tbody[data-case="france"] tr.case-head`)
	screenshot(t, ctx, "viewer-eval.png")
	assert.Contains(t, summary, "echo on ")
	assert.Contains(t, summary, "2/4 passed (50%")
	assert.Contains(t, france, "france · 2/2 passed")
	assert.Contains(t, peru, "failed")
	assert.Contains(t, peru, `contains missing "Lima"`)

	run := res.Cases[1].Trials[0].Runs[0]
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`#eval-table tbody[data-case="peru"] a.trial-run`),
		chromedp.WaitVisible(`#timeline`),
	))
	location, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(location, "?run="+run), location)
}
