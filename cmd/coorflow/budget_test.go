package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/trace"
)

const budgetExample = "../../examples/budget"

// budgetServer answers the example's two calls: the draft with 1000 prompt
// tokens of which 800 cached and 200 completion tokens, the review with
// 300 and 50.
func budgetServer(t *testing.T) *openaitest.Server {
	t.Helper()
	srv := openaitest.NewServer(
		openaitest.Response{Text: "A draft on caching.", Usage: &openaitest.Usage{PromptTokens: 1000, CachedTokens: 800, CompletionTokens: 200}},
		openaitest.Response{Text: "A fair critique.", Usage: &openaitest.Usage{PromptTokens: 300, CompletionTokens: 50}})
	t.Cleanup(srv.Close)
	return srv
}

// TestABudgetStopsTheRunAndARaisedBudgetContinuesIt: over the OpenAI wire
// protocol, the run stops before the call that would exceed its budget
// with an error that says what was spent and how to go on; the thread
// keeps the finished step; the same budget again makes no call; a raised
// one finishes the run without repeating the first call, and the usage of
// the thread adds up.
func TestABudgetStopsTheRunAndARaisedBudgetContinuesIt(t *testing.T) {
	srv := budgetServer(t)
	c := newCLI(t)
	c.env = map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.BaseURL()}

	code, stdout, stderr := c.run("run", budgetExample, "--input", "prompt caching", "--thread", "b1", "--budget-tokens", "1100")
	require.Equal(t, exitFailed, code, stderr)
	assert.Contains(t, stderr, `coorflow: run failed: graph: node "review" (step 1, attempt 1): workflows: node "review": `+
		"llm: run budget exceeded: 1200 tokens and $0.0002 spent of a budget of 1100 tokens and $0.0500; the next model call")
	assert.Contains(t, stderr, "the thread keeps every finished step: continue it with a raised budget: coorflow run ../../examples/budget --thread b1 --budget-tokens 2200")
	// 200 fresh input tokens at $0.15, 800 cached at $0.075, 200 output at $0.60 per million: $0.00021.
	assert.Contains(t, stdout, "usage: 1 call, 1200 tokens (in 1000 of which 800 cached, out 200), $0.0002")
	assert.Len(t, srv.Requests(), 1, "the call over budget was not made")

	code, _, stderr = c.run("run", budgetExample, "--thread", "b1", "--budget-tokens", "1100")
	require.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "llm: run budget exceeded: 1200 tokens", "the turn's spending counts in the run that continues it")
	assert.Len(t, srv.Requests(), 1)

	code, stdout, stderr = c.run("run", budgetExample, "--thread", "b1", "--budget-tokens", "2200")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "A fair critique.")
	assert.Contains(t, stdout, "usage: 1 call, 350 tokens (in 300, out 50), $0.0001")
	assert.Len(t, srv.Requests(), 2, "the draft was not asked for again")

	code, stdout, _ = c.run("runs", "usage", "--thread", "b1")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "thread b1: 3 runs, 2 calls, 1550 tokens (in 1300 of which 800 cached, out 250), $0.0003\n", stdout)

	runs := c.listRuns("--thread", "b1")
	require.Len(t, runs, 3)
	code, stdout, _ = c.run("runs", "show", runs[2].ID)
	require.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "usage       1 call, 1200 tokens (in 1000 of which 800 cached, out 200), $0.0002")
	assert.Contains(t, stdout, "1 model call, 1200 tokens, $0.0002")
	code, stdout, _ = c.run("runs", "show", runs[0].ID, "--json")
	require.Equal(t, exitOK, code)
	var tl trace.Timeline
	require.NoError(t, json.Unmarshal([]byte(stdout), &tl))
	assert.Equal(t, 350, tl.Usage.Tokens())
	assert.InDelta(t, (300*0.15+50*0.60)/1e6, tl.Usage.CostUSD, 1e-12)
}

// TestABudgetThatAsksWaitsForAnAnswer: with on_exceed: ask the run pauses
// on a question; the answer {"tokens": N} raises the budget and the run
// goes on.
func TestABudgetThatAsksWaitsForAnAnswer(t *testing.T) {
	dir := t.TempDir()
	wf, err := os.ReadFile(filepath.Join(budgetExample, "workflow.yaml"))
	require.NoError(t, err)
	demo, err := os.ReadFile(filepath.Join(budgetExample, "demo.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workflow.yaml"), []byte(strings.Replace(string(wf), "on_exceed: stop", "on_exceed: ask", 1)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "demo.yaml"), demo, 0o600))
	srv := budgetServer(t)
	c := newCLI(t)
	c.env = map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.BaseURL()}

	code, stdout, stderr := c.run("run", dir, "--input", "prompt caching", "--thread", "b2", "--budget-tokens", "1100")
	require.Equal(t, exitInterrupted, code, stderr)
	assert.Contains(t, stdout, "The run budget of 1100 tokens and $0.0500 would be exceeded: 1200 tokens and $0.0002 spent")
	assert.Contains(t, stdout, "--thread b2 --resume '<answer>'")
	assert.Len(t, srv.Requests(), 1)

	code, stdout, stderr = c.run("run", dir, "--thread", "b2", "--budget-tokens", "1100", "--resume", `{"tokens": 3000}`)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "A fair critique.")
	assert.Len(t, srv.Requests(), 2)
}

// TestADollarBudgetNeedsAPricedModel: a model without a price cannot be
// held to a dollar budget; the run says so before calling it, and keeps
// nothing half done.
func TestADollarBudgetNeedsAPricedModel(t *testing.T) {
	srv := budgetServer(t)
	c := newCLI(t)
	c.env = map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.BaseURL()}
	code, _, stderr := c.run("run", budgetExample, "--input", "x", "--thread", "b3", "--model", "basic=openai:my-finetune")
	require.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "llm: model has no price: the run budget of $0.0500 cannot be kept: model my-finetune has no price; "+
		"give its price in the workflow file (models.TIER.price: input, cached_input, output in dollars per million tokens) or set a budget in tokens")
	assert.Contains(t, stderr, "once the model has a price, continue it with: coorflow run ../../examples/budget --thread b3")
	assert.Empty(t, srv.Requests())
}

// post sends POST path with a bearer token and a JSON body.
func (s *served) post(path, token, body string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.t.Context(), "POST", s.addr+path, strings.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeKeepsOwnerAndWorkflowBudgets: coorflow serve takes the run
// budget from the workflow file and an owner budget from its flags; over
// the OpenAI wire protocol, the owner's budget stops a run and then
// refuses the owner's next one, and GET /v1/usage says what was spent.
func TestServeKeepsOwnerAndWorkflowBudgets(t *testing.T) {
	srv := budgetServer(t)
	c := newCLI(t)
	c.env = map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.BaseURL(), "COORFLOW_TOKENS": "tok=alice"}
	s := c.serve(budgetExample, "--owner-budget-tokens", "1100")

	code, body := s.post("/v1/threads", "tok", `{"workflow": "budget", "thread_id": "t1"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = s.post("/v1/threads/t1/runs/wait", "tok", `{"input": {"topic": "caching"}}`)
	require.Equal(t, http.StatusOK, code, body)
	var ru server.Run
	require.NoError(t, json.Unmarshal([]byte(body), &ru), body)
	require.NotNil(t, ru.Error, body)
	assert.Equal(t, server.CodeBudgetExceeded, ru.Error.Code)
	assert.Contains(t, ru.Error.Message, "llm: owner budget exceeded: 1200 tokens and $0.0002 spent of a budget of 1100 tokens")
	assert.Equal(t, &llm.Budget{Tokens: 20000, USD: 0.05}, ru.Budget, "the file's run budget")
	assert.Len(t, srv.Requests(), 1)

	code, body = s.post("/v1/threads/t1/runs/wait", "tok", `{}`)
	assert.Equal(t, http.StatusPaymentRequired, code)
	assert.Contains(t, body, `owner \"alice\" has spent its budget of 1100 tokens (1200 tokens, $0.0002)`)

	code, body = s.get("/v1/usage", "tok")
	require.Equal(t, http.StatusOK, code)
	var u server.Usage
	require.NoError(t, json.Unmarshal([]byte(body), &u), body)
	assert.Equal(t, 1200, u.Usage.Tokens())
	assert.Equal(t, &llm.Budget{Tokens: 1100}, u.Budget)
	code, stderr := s.stop()
	assert.Equal(t, exitOK, code, stderr)
}

// TestABudgetAsksOnceForTheAgentsItBlocks: two nodes of one step are both
// stopped by a budget with on_exceed: ask; the run asks one question and
// one --resume answers it for both (it asked once per agent, and --resume
// failed as ambiguous).
func TestABudgetAsksOnceForTheAgentsItBlocks(t *testing.T) {
	dir := t.TempDir()
	wf := `apiVersion: coorflow/v1
name: fanout
input: topic
output: left
models:
  basic:
    provider: openai
    model: gpt-4o-mini
settings:
  budget:
    tokens: 1100
    on_exceed: ask
state:
  topic: {type: string}
  draft: {type: string}
  left: {type: string}
  right: {type: string}
nodes:
  draft:
    type: llm
    prompt: "Write on {{ state.topic }}."
    output: draft
  left:
    type: llm
    prompt: "Praise: {{ state.draft }}"
    output: left
  right:
    type: llm
    prompt: "Critique: {{ state.draft }}"
    output: right
edges:
  - {from: start, to: draft}
  - {from: draft, to: left}
  - {from: draft, to: right}
  - {from: left, to: end}
  - {from: right, to: end}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workflow.yaml"), []byte(wf), 0o600))
	srv := openaitest.NewServer(
		openaitest.Response{Text: "A draft.", Usage: &openaitest.Usage{PromptTokens: 1000, CompletionTokens: 200}},
		openaitest.Response{Text: "A fine draft.", Usage: &openaitest.Usage{PromptTokens: 100, CompletionTokens: 10}},
		openaitest.Response{Text: "A fine draft.", Usage: &openaitest.Usage{PromptTokens: 100, CompletionTokens: 10}})
	t.Cleanup(srv.Close)
	c := newCLI(t)
	c.env = map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.BaseURL()}

	code, stdout, stderr := c.run("run", dir, "--input", "caching", "--thread", "f1")
	require.Equal(t, exitInterrupted, code, stderr)
	assert.Equal(t, 1, strings.Count(stdout, "The run budget of 1100 tokens would be exceeded"), stdout)
	assert.Contains(t, stdout, "--thread f1 --resume '<answer>'")
	assert.NotContains(t, stdout, "--answer")
	assert.Len(t, srv.Requests(), 1)

	code, stdout, stderr = c.run("run", dir, "--thread", "f1", "--resume", `{"tokens": 3000}`)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "A fine draft.")
	assert.Len(t, srv.Requests(), 3)
}
