package eval_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/eval"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/llm/scripted"
)

// openAIModels are models of every tier on an OpenAI-compatible server.
func openAIModels(t *testing.T, srv *openaitest.Server) *llm.Models {
	t.Helper()
	cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: openai\n    model: gpt-4o-mini\n    base_url: " +
		srv.BaseURL() + "\n    api_key_env: JUDGE_KEY\n"))
	require.NoError(t, err)
	require.NoError(t, cfg.ApplyEnv(func(k string) string { return map[string]string{"JUDGE_KEY": "sk-judge"}[k] }))
	ms, err := llm.New(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ms.Close() })
	return ms
}

// section returns the text between <name> and </name> in a prompt.
func section(prompt, name string) string {
	_, after, ok := strings.Cut(prompt, "<"+name+">\n")
	if !ok {
		return ""
	}
	text, _, _ := strings.Cut(after, "\n</"+name+">")
	return text
}

// scoringJudge is an OpenAI-wire server that scores what it is sent: an
// answer naming what the rubric asks for scores 0.9, any other 0.1.
func scoringJudge(t *testing.T, requests *atomic.Int32) *openaitest.Server {
	srv := openaitest.NewFunc(func(req openaitest.ChatRequest) openaitest.Response {
		requests.Add(1)
		prompt := req.Messages[len(req.Messages)-1].Text()
		rubric, answer := section(prompt, "rubric"), section(prompt, "answer")
		want := strings.TrimPrefix(rubric, "The answer names ")
		v := eval.Verdict{Score: 0.1, Reason: "it does not name " + want}
		if strings.Contains(answer, want) {
			v = eval.Verdict{Score: 0.9, Reason: "it names " + want}
		}
		b, _ := json.Marshal(v)
		return openaitest.Response{Text: string(b), Usage: &openaitest.Usage{PromptTokens: 200, CompletionTokens: 20}}
	})
	t.Cleanup(srv.Close)
	return srv
}

func TestAJudgeOverTheOpenAIWireScoresByTheRubricAndItsCostIsCounted(t *testing.T) {
	var requests atomic.Int32
	judge := openAIModels(t, scoringJudge(t, &requests))
	f, r := workflow(t, staticModels(t, answers(map[string]string{"France": "It is Paris.", "Peru": "It is Cusco."})))
	ds := dataset(t, f, "judged.yaml", `
graders:
  - judge: {tier: reasoning, pass: 0.7}
cases:
  - {id: fr, input: 'capital of France?', rubric: The answer names Paris}
  - {id: pe, input: 'capital of Peru?', rubric: The answer names Lima}
`)
	res, err := eval.Run(t.Context(), eval.Config{File: f, Runnable: r, Dataset: ds, Judge: judge, Repeats: 2})
	require.NoError(t, err)
	fr, pe := res.Cases[0], res.Cases[1]
	assert.Equal(t, 2, fr.Passed)
	assert.InDelta(t, 0.9, fr.MeanScore, 1e-9)
	assert.Equal(t, "it names Paris", fr.Trials[0].Grades[0].Reason)
	assert.Equal(t, 0, pe.Passed)
	assert.InDelta(t, 0.1, pe.MeanScore, 1e-9)
	assert.Equal(t, eval.StatusFailed, pe.Trials[0].Status)
	assert.EqualValues(t, 4, requests.Load())
	assert.Equal(t, 4, res.Total.JudgeSpend.Calls)
	assert.Equal(t, 4*220, res.Total.JudgeSpend.Tokens())
	assert.Positive(t, res.Total.JudgeSpend.CostUSD, "gpt-4o-mini has a price")
	assert.Equal(t, 0.0, res.Total.Spend.CostUSD, "the scripted workflow model costs nothing: only the judge does")
	assert.Contains(t, res.Table(), "judges: 4 calls, 880 tokens")
}

func TestAJudgeIsKeptWithinTheTotalBudget(t *testing.T) {
	var requests atomic.Int32
	judge := openAIModels(t, scoringJudge(t, &requests))
	f, r := workflow(t, staticModels(t, scripted.New(scripted.Script{Default: &scripted.Reply{Text: "Paris"}})))
	ds := dataset(t, f, "judged.yaml", "graders: [{judge: The answer names Paris}]\ncases: [{input: 'capital of France?'}]\n")
	res, err := eval.Run(t.Context(), eval.Config{File: f, Runnable: r, Dataset: ds, Judge: judge, TotalBudget: llm.Budget{Tokens: 60}})
	require.NoError(t, err)
	tr := res.Cases[0].Trials[0]
	assert.Equal(t, eval.StatusOverBudget, tr.Status, tr.Error)
	assert.Contains(t, tr.Error, "llm: eval budget exceeded")
	assert.Zero(t, requests.Load(), "the judge's call was not made")
}

func TestPairwiseAsksBothOrdersAndCallsPositionBiasATie(t *testing.T) {
	c := &eval.Case{ID: "fr", Input: "capital of France?", Rubric: "names Paris"}
	var firsts []string
	fair := openaitest.NewFunc(func(req openaitest.ChatRequest) openaitest.Response {
		p := req.Messages[len(req.Messages)-1].Text()
		firsts = append(firsts, section(p, "first_answer"))
		w := "second"
		if strings.Contains(section(p, "first_answer"), "Paris") {
			w = "first"
		}
		return openaitest.Text(`{"winner": "` + w + `", "reason": "the ` + w + ` names Paris"}`)
	})
	defer fair.Close()
	v, err := eval.Pairwise(t.Context(), openAIModels(t, fair), llm.TierBasic, c, "", "Lyon", "Paris")
	require.NoError(t, err)
	assert.Equal(t, eval.WinB, v.Winner)
	assert.True(t, v.Consistent)
	assert.Equal(t, [2]string{"the second names Paris", "the first names Paris"}, v.Reasons)
	assert.Equal(t, []string{"Lyon", "Paris"}, firsts, "asked in both orders")
	assert.Equal(t, 2, v.Spend.Calls)

	biased := openaitest.NewFunc(func(openaitest.ChatRequest) openaitest.Response {
		return openaitest.Text(`{"winner": "first", "reason": "the first one"}`)
	})
	defer biased.Close()
	v, err = eval.Pairwise(t.Context(), openAIModels(t, biased), llm.TierBasic, c, "", "Lyon", "Paris")
	require.NoError(t, err)
	assert.Equal(t, eval.Tie, v.Winner)
	assert.False(t, v.Consistent)
}
