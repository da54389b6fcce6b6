package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/trace"
)

// reviewPlan is the plan reviewGraph asks a person to approve.
const reviewPlan = "1. Compare Redis and Memcached\n2. Recommend one"

// feedback is what a person answers a plan review.
type feedback struct {
	Approve  bool   `json:"approve"`
	Feedback string `json:"feedback"`
}

// reviewGraph is the workflow "review", as examples/coor's human review:
// its node review has the agent "reviewer" look at the plan, then asks a
// person to approve it (graph.Interrupt) and writes their feedback as the
// answer.
func reviewGraph(t *testing.T) *graph.Runnable {
	t.Helper()
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"reviewer": {{Text: "The plan looks complete."}}}})
	agent, err := react.New(react.Config{Name: "reviewer", Model: model, Info: llm.ModelInfo{Tier: "basic", Model: "scripted"},
		SystemPrompt: "You review plans."})
	require.NoError(t, err)
	g := graph.New("review", questionKey, answerKey)
	g.AddNode("review", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if _, err := agent.Run(ctx, react.Task{Input: reviewPlan}); err != nil {
			return graph.Command{}, err
		}
		fb, err := graph.InterruptAs[feedback](ctx, map[string]any{"question": "Approve this plan?", "plan": reviewPlan})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(answerKey.Set("Revised after review: " + fb.Feedback)), nil
	})
	g.AddEdge(graph.Start, "review")
	g.AddEdge("review", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// interruptedReview serves reviewGraph with a recorder and runs it once
// for alice on thread "r": the run stops on its question.
func interruptedReview(t *testing.T) (*env, server.Run) {
	t.Helper()
	e := newEnv(t, server.Config{Workflows: workflows(reviewGraph(t)), Recorder: recorder(t)})
	e.thread(alice, "review", "r")
	ru := e.wait(alice, "r", map[string]any{"input": map[string]any{"question": "Redis or Memcached?"}})
	require.Equal(t, "interrupted", ru.Status, "%+v", ru.Error)
	return e, ru
}

func TestViewerShowsTheQuestionOfAnInterruptedRunInChromium(t *testing.T) {
	e, ru := interruptedReview(t)

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+ru.ID+"#token="+alice),
		chromedp.WaitVisible(`#run-status[data-status="interrupted"]`),
		chromedp.WaitVisible(`button.agent[data-name="reviewer"]`),
		chromedp.WaitVisible(`#detail .block`),
	))
	type page struct {
		Questions               int
		Detail, Question, Plan  string
		PlanLines               int
		NodeStatus, AgentStatus string
		NodePill, AnswerHint    string
		BarStatus               string
		QuestionNode            string
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[page](`(() => {
		const q = document.querySelector("#questions .question");
		const text = (sel) => { const n = document.querySelector(sel); return n ? n.textContent : ""; };
		return {
			questions: document.querySelectorAll("#questions .question").length,
			detail: document.querySelector("#detail").textContent,
			question: text('#questions dd[data-field="question"]'),
			plan: text('#questions dd[data-field="plan"]'),
			planLines: document.querySelectorAll('#questions dd[data-field="plan"] ol li').length,
			nodeStatus: text('#timeline .node[data-node="review"] .node-head .status'),
			agentStatus: (document.querySelector('button.agent[data-name="reviewer"]') || {dataset: {}}).dataset.status || "",
			nodePill: text('#questions .question-head .status'),
			answerHint: text("#no-answer"),
			barStatus: (document.querySelector(".gantt-step .gantt-bar") || {className: ""}).className,
			questionNode: q ? q.dataset.node : "",
		};
	})()`))
	require.NoError(t, err)
	screenshot(t, ctx, "viewer-interrupted.png")

	assert.Equal(t, 1, got.Questions, "the question the run stopped on: %q", got.Detail)
	assert.Equal(t, "review", got.QuestionNode)
	assert.Equal(t, "Approve this plan?", got.Question)
	assert.Contains(t, got.Plan, "Compare Redis and Memcached", "the plan under review")
	assert.Equal(t, 2, got.PlanLines, "the plan reads as its list")
	assert.Equal(t, "waiting", got.NodeStatus, "the asking node waits; it is not done")
	assert.Equal(t, "waiting", got.AgentStatus)
	assert.Equal(t, "waiting", got.NodePill)
	assert.Contains(t, got.BarStatus, "status-waiting")
	assert.Contains(t, got.AnswerHint, "waits for the answer")
	assert.NotContains(t, got.Detail, "recorded no answer")
}

func TestViewerShowsWhatAResumeRunWasAnsweredInChromium(t *testing.T) {
	e, first := interruptedReview(t)
	answer := feedback{Approve: false, Feedback: "Add a **rollback** step."}
	second := e.wait(alice, "r", map[string]any{"resume": answer})
	require.Equal(t, "done", second.Status, "%+v", second.Error)

	var run trace.RunInfo
	e.call("GET", "/v1/trace/runs/"+second.ID, alice, nil, http.StatusOK, &run)
	assert.Equal(t, trace.StartResume, run.Start)
	assert.JSONEq(t, `{"resume":{"approve":false,"feedback":"Add a **rollback** step."}}`, string(run.Input), "the answers are recorded")
	var list server.TraceRunList
	e.call("GET", "/v1/trace/runs?thread=r", alice, nil, http.StatusOK, &list)
	require.Len(t, list.Runs, 2)
	assert.Equal(t, "answered: approve: false, feedback: Add a **rollback** step.", list.Runs[0].InputText)
	assert.Equal(t, first.ID, list.Runs[1].ID)
	assert.Equal(t, "question: Redis or Memcached?", list.Runs[1].InputText)

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/#token="+alice),
		chromedp.WaitVisible(`tr.run-row[data-run="`+second.ID+`"]`),
	))
	row := text(t, ctx, `tr.run-row[data-run="`+second.ID+`"] td.input a`)
	screenshot(t, ctx, "viewer-runs-resumed.png")
	assert.Equal(t, "answered: approve: false, feedback: Add a **rollback** step.", row, "the runs list says what was answered")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+second.ID),
		chromedp.WaitVisible(`#run-status[data-status="done"]`),
		chromedp.WaitVisible(`#answer`),
	))
	type page struct{ Detail, Feedback, Strong, Approve, Meta string }
	got, err := chromedp.Run(ctx, chromedp.Evaluate[page](`(() => {
		const text = (sel) => { const n = document.querySelector(sel); return n ? n.textContent : ""; };
		return {
			detail: text("#detail"),
			feedback: text('#answered dd[data-field="feedback"]'),
			strong: text('#answered dd[data-field="feedback"] strong'),
			approve: text('#answered dd[data-field="approve"]'),
			meta: text("#timeline .run-answered"),
		};
	})()`))
	require.NoError(t, err)
	screenshot(t, ctx, "viewer-resumed.png")
	assert.Equal(t, "Add a rollback step.", got.Feedback, "the feedback, as Markdown: %q", got.Detail)
	assert.Equal(t, "rollback", got.Strong)
	assert.Equal(t, "false", got.Approve)
	assert.True(t, strings.HasPrefix(got.Meta, "Answered"), "the run's facts say it answered: %q", got.Meta)
	assert.Contains(t, got.Meta, "Add a rollback step.")
	assert.Contains(t, got.Detail, "Revised after review: Add a rollback step.", "the run's answer")
}

func TestViewerShowsTheThreadAsAConversationInChromium(t *testing.T) {
	e, first := interruptedReview(t)
	second := e.wait(alice, "r", map[string]any{"resume": feedback{Feedback: "Add a rollback step."}})
	require.Equal(t, "done", second.Status, "%+v", second.Error)

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+second.ID+"#token="+alice),
		chromedp.WaitVisible(`#conversation li.turn[data-run="`+first.ID+`"]`),
	))
	type turn struct{ Run, In, Out string }
	turns, err := chromedp.Run(ctx, chromedp.Evaluate[[]turn](`[...document.querySelectorAll("#conversation li.turn")].map((li) => ({
		run: li.dataset.run,
		in: li.querySelector(".turn-in a").textContent,
		out: li.querySelector(".turn-out").textContent,
	}))`))
	require.NoError(t, err)
	current, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#conversation li.turn.current").dataset.run`))
	require.NoError(t, err)
	screenshot(t, ctx, "viewer-conversation.png")

	assert.Equal(t, []turn{
		{first.ID, "question: Redis or Memcached?", "AskedApprove this plan?"},
		{second.ID, "answered: approve: false, feedback: Add a rollback step.", "OutRevised after review: Add a rollback step."},
	}, turns, "the thread's turns, oldest first: what each was given and what it asked or answered")
	assert.Equal(t, second.ID, current, "the run shown is marked")

	// A turn's link opens its run.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`#conversation li.turn[data-run="`+first.ID+`"] .turn-in a`),
		chromedp.WaitVisible(`#run-status[data-status="interrupted"]`),
		chromedp.WaitVisible(`#questions .question`),
	))
}

func TestViewerShowsTheStateAtEachCheckpointWithItsDiffInChromium(t *testing.T) {
	e, _ := interruptedReview(t)
	second := e.wait(alice, "r", map[string]any{"resume": feedback{Feedback: "Add a rollback step."}})
	require.Equal(t, "done", second.Status, "%+v", second.Error)
	var history server.History
	e.call("GET", "/v1/threads/r/history", alice, nil, http.StatusOK, &history)
	require.GreaterOrEqual(t, len(history.Checkpoints), 2)
	newest := history.Checkpoints[0]

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+second.ID+"#token="+alice),
		chromedp.WaitVisible(`#checkpoints details.checkpoint`),
	))
	_, err := chromedp.Run(ctx, chromedp.Evaluate[*int](`document.querySelectorAll("#checkpoints details").forEach((d) => d.open = true), null`))
	require.NoError(t, err)
	type change struct{ Checkpoint, Channel, Change, Before, After string }
	changes, err := chromedp.Run(ctx, chromedp.Evaluate[[]change](`[...document.querySelectorAll("#checkpoints tr[data-channel]")].map((r) => ({
		checkpoint: r.closest("details").dataset.checkpoint,
		channel: r.dataset.channel,
		change: r.querySelector(".change").textContent,
		before: r.querySelector(".before").textContent,
		after: r.querySelector(".after").textContent,
	}))`))
	require.NoError(t, err)
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#checkpoints details.checkpoint")].map((d) => d.dataset.checkpoint)`))
	require.NoError(t, err)
	screenshot(t, ctx, "viewer-checkpoints.png")

	want := make([]string, len(history.Checkpoints))
	for i, cp := range history.Checkpoints {
		want[i] = cp.Checkpoint
	}
	assert.Equal(t, want, shown, "every checkpoint of the thread, newest first")
	assert.Contains(t, changes, change{newest.Checkpoint, "answer", "added", "", "Revised after review: Add a rollback step."},
		"the newest checkpoint adds the answer: %+v", changes)
	var question int
	for _, c := range changes {
		if c.Channel == "question" {
			question++
			assert.Equal(t, change{c.Checkpoint, "question", "added", "", "Redis or Memcached?"}, c, "the input, once, where it was written")
		}
	}
	assert.Equal(t, 1, question, "unchanged channels are not repeated")
}
