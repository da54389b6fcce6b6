// Package eval_test runs the evaluation example: examples/eval/coor.yaml
// on the coor example offline, its judge over the OpenAI wire protocol,
// and an eval killed with SIGKILL and resumed.
package eval_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/clitest"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// section returns the text between <name> and </name> in a prompt.
func section(prompt, name string) string {
	_, after, ok := strings.Cut(prompt, "<"+name+">\n")
	if !ok {
		return ""
	}
	text, _, _ := strings.Cut(after, "\n</"+name+">")
	return text
}

type result struct {
	Status string `json:"status"`
	Total  struct {
		Trials     int `json:"trial_count"`
		Passed     int `json:"passed"`
		JudgeSpend struct {
			Calls   int     `json:"calls"`
			CostUSD float64 `json:"cost_usd"`
		} `json:"judge_spend"`
		Spend struct {
			CostUSD float64 `json:"cost_usd"`
		} `json:"spend"`
	} `json:"total"`
	Cases []struct {
		Case   string `json:"case"`
		Trials []struct {
			Repeat int    `json:"repeat"`
			Status string `json:"status"`
			Grades []struct {
				Grader string  `json:"grader"`
				Pass   bool    `json:"pass"`
				Score  float64 `json:"score"`
				Reason string  `json:"reason"`
			} `json:"grades"`
		} `json:"trials"`
	} `json:"cases"`
}

// TestTheJudgeDatasetScoresTheReportsOverTheOpenAIWire runs the coor
// example on its demo model and the judge of coor-judge.yaml on an
// OpenAI-compatible server that scores what it is sent: a report that
// cites numbered sources scores 0.9, any other 0.4.
func TestTheJudgeDatasetScoresTheReportsOverTheOpenAIWire(t *testing.T) {
	var calls atomic.Int32
	srv := openaitest.NewFunc(func(req openaitest.ChatRequest) openaitest.Response {
		calls.Add(1)
		p := req.Messages[len(req.Messages)-1].Text()
		answer, rubric := section(p, "answer"), section(p, "rubric")
		v := map[string]any{"score": 0.4, "reason": "no sources cited, as the rubric asks: " + rubric}
		if regexp.MustCompile(`\[\d+\]`).MatchString(answer) {
			v = map[string]any{"score": 0.9, "reason": "it cites its sources"}
		}
		b, _ := json.Marshal(v)
		return openaitest.Response{Text: string(b), Usage: &openaitest.Usage{PromptTokens: 1000, CompletionTokens: 30}}
	})
	defer srv.Close()
	cli := clitest.New(t, "../..")
	code, out, stderr := cli.RunWith([]string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.BaseURL()},
		"eval", "examples/coor", "examples/eval/coor-judge.yaml", "--demo", "--judge", "openai:gpt-4o-mini", "--json")
	require.Equal(t, 0, code, stderr)
	var res result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.EqualValues(t, 4, calls.Load(), "one judge call per case")
	assert.Equal(t, 4, res.Total.JudgeSpend.Calls)
	assert.InDelta(t, 4*(1000*0.15+30*0.6)/1e6, res.Total.JudgeSpend.CostUSD, 1e-9, "gpt-4o-mini's price")
	assert.Zero(t, res.Total.Spend.CostUSD, "the workflow ran on its demo model")
	judged := map[string]float64{}
	for _, c := range res.Cases {
		for _, g := range c.Trials[0].Grades {
			if g.Grader == "judge" {
				judged[c.Case] = g.Score
			}
		}
	}
	assert.Equal(t, map[string]float64{"sqlite-postgres": 0.9, "redis-memcached": 0.4, "queue": 0.4, "citations-everywhere": 0.4}, judged)
}

var trialLine = regexp.MustCompile(`eval e-killed: (\S+ #\d) (\w+) in`)

// TestAnEvalKilledWithSIGKILLResumesWithoutRerunningFinishedCases kills
// coorflow eval once two runs of cases have ended, then resumes it.
func TestAnEvalKilledWithSIGKILLResumesWithoutRerunningFinishedCases(t *testing.T) {
	cli := clitest.New(t, "../..")
	args := []string{"eval", "examples/coor", "examples/eval/coor.yaml", "--repeats", "2", "--concurrency", "1", "-v"}
	cmd := cli.Command(nil, append(args, "--id", "e-killed")...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	before := map[string]bool{}
	lines := bufio.NewScanner(stderr)
	for len(before) < 2 && lines.Scan() {
		if m := trialLine.FindStringSubmatch(lines.Text()); m != nil {
			before[m[1]] = true
		}
	}
	require.Len(t, before, 2, "two runs ended before the kill")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	for lines.Scan() { // what it wrote before it died
		if m := trialLine.FindStringSubmatch(lines.Text()); m != nil {
			before[m[1]] = true
		}
	}
	err = cmd.Wait()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "signal: killed")

	code, out, errOut := cli.Run("eval", "show", "e-killed", "--json")
	require.Equal(t, 0, code, errOut)
	var kept result
	require.NoError(t, json.Unmarshal([]byte(out), &kept))
	assert.Equal(t, "running", kept.Status, "it never finished")
	// A run may have been kept and the process killed before it printed
	// its line: the database says which ended.
	ended := map[string]bool{}
	for _, c := range kept.Cases {
		for _, tr := range c.Trials {
			ended[fmt.Sprintf("%s #%d", c.Case, tr.Repeat+1)] = true
		}
	}
	for run := range before {
		assert.True(t, ended[run], "%s ended and was kept", run)
	}
	require.Less(t, len(ended), 8)

	code, out, errOut = cli.Run(append(args, "--resume", "e-killed")...)
	require.Equal(t, 0, code, errOut)
	after := map[string]bool{}
	for _, m := range trialLine.FindAllStringSubmatch(errOut, -1) {
		assert.False(t, ended[m[1]], "%s ran again", m[1])
		after[m[1]] = true
	}
	assert.Len(t, after, 8-len(ended), "the others ran")
	assert.Regexp(t, `TOTAL\s+6/8 75%`, out)
}
