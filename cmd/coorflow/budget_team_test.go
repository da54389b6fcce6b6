package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// teamWorkflow is a team of four react agents that run at once, each
// calling python twice before it writes a long answer, on gpt-4o-mini
// over the OpenAI wire protocol at %s.
const teamWorkflow = `apiVersion: coorflow/v1
name: team
input: question
output: a
state:
  question: {type: string}
  a: {type: string}
  b: {type: string}
  c: {type: string}
  d: {type: string}
models:
  basic: {provider: openai, model: gpt-4o-mini, base_url: "%s", max_retries: -1}
tools:
  python: {}
nodes:
  a: {type: react, prompt: "agent a: {{ state.question }}", output: a, tools: [python]}
  b: {type: react, prompt: "agent b: {{ state.question }}", output: b, tools: [python]}
  c: {type: react, prompt: "agent c: {{ state.question }}", output: c, tools: [python]}
  d: {type: react, prompt: "agent d: {{ state.question }}", output: d, tools: [python]}
edges:
  - {from: start, to: a}
  - {from: start, to: b}
  - {from: start, to: c}
  - {from: start, to: d}
  - {from: a, to: end}
  - {from: b, to: end}
  - {from: c, to: end}
  - {from: d, to: end}
`

// teamProvider answers a react agent with a python call until it has
// two results, then with a report of about 1,200 tokens; every answer is
// cut to the call's max_tokens, as a provider that honours it does. It
// counts the tokens it reports as used: what the run is billed.
type teamProvider struct {
	*openaitest.Server
	calls, tokens atomic.Int64
}

func newTeamProvider(t *testing.T) *teamProvider {
	t.Helper()
	p := &teamProvider{}
	p.Server = openaitest.NewFunc(func(req openaitest.ChatRequest) openaitest.Response {
		limit := max(req.MaxTokens, req.MaxCompletionTokens)
		u := &openaitest.Usage{PromptTokens: llm.TokensPerReply}
		results := 0
		for _, m := range req.Messages {
			u.PromptTokens += llm.TokensPerMessage + llm.EstimateTokens(m.Text())
			if m.Role == "tool" {
				results++
			}
		}
		call := openaitest.ToolCall{Name: "python", Arguments: fmt.Sprintf(`{"code": "print(%d * 7)"}`, results+6)}
		resp := openaitest.Response{ToolCalls: []openaitest.ToolCall{call}}
		u.CompletionTokens = llm.EstimateTokens(call.Name) + llm.EstimateTokens(call.Arguments)
		if results >= 2 || (limit > 0 && u.CompletionTokens > limit) {
			text := strings.TrimSpace(strings.Repeat("finding ", 600))
			for limit > 0 && llm.EstimateTokens(text) > limit {
				text = text[:len(text)-len(" finding")]
			}
			resp, u.CompletionTokens = openaitest.Response{Text: text}, llm.EstimateTokens(text)
		}
		resp.Usage = u
		p.calls.Add(1)
		p.tokens.Add(int64(u.PromptTokens + u.CompletionTokens))
		return resp
	})
	t.Cleanup(p.Close)
	return p
}

var raisedBudget = regexp.MustCompile(`continue it with a raised budget: coorflow run \S+ --thread team1 --budget-tokens (\d+)`)

// TestParallelReactAgentsKeepTheRunBudgetAndItsContinuation: four react
// agents at once under a run budget of 4,000 tokens cost no more than
// that as the provider counts it (before: 4,746 of 4,000 on a coor team,
// calls admitted by their prompts alone); the raised budget the error
// prints, when followed, holds for the thread's turn as well.
func TestParallelReactAgentsKeepTheRunBudgetAndItsContinuation(t *testing.T) {
	const budget = 4000
	p := newTeamProvider(t)
	wf := filepath.Join(t.TempDir(), "team.yaml")
	require.NoError(t, os.WriteFile(wf, fmt.Appendf(nil, teamWorkflow, p.BaseURL()), 0o600))
	c := newCLI(t)
	c.env = map[string]string{"OPENAI_API_KEY": "sk-test"}

	code, _, stderr := c.run("run", wf, "--input", "what is six times seven", "--thread", "team1", "--budget-tokens", strconv.Itoa(budget))
	require.Equal(t, exitFailed, code, stderr)
	assert.Contains(t, stderr, "llm: run budget exceeded")
	first := p.tokens.Load()
	t.Logf("first run: %d calls, %d tokens billed", p.calls.Load(), first)
	assert.LessOrEqual(t, first, int64(budget), "the provider billed no more than the run's budget")
	assert.Greater(t, first, int64(budget)*8/10, "the budget was used")

	m := raisedBudget.FindStringSubmatch(stderr)
	require.NotNil(t, m, "the error prints the command that continues the run: %s", stderr)
	raised, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	code, stdout, stderr := c.run("run", wf, "--thread", "team1", "--budget-tokens", m[1])
	total := p.tokens.Load()
	t.Logf("continued with %d: exit %d, %d calls, %d tokens billed in all", raised, code, p.calls.Load(), total)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "finding")
	assert.LessOrEqual(t, total, int64(raised), "the provider billed the turn no more than the raised budget")
}
