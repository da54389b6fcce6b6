package server_test

import (
	"context"
	"encoding/json"
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
func reviewGraph(t *testing.T) *graph.Runnable { return reviewGraphOf(t, 1) }

// reviewGraphOf is reviewGraph whose reviewer can run times times.
func reviewGraphOf(t *testing.T, times int) *graph.Runnable {
	t.Helper()
	replies := make([]scripted.Reply, times)
	for i := range replies {
		replies[i] = scripted.Reply{Text: "The plan looks complete."}
	}
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"reviewer": replies}})
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
	return interruptedReviewOf(t, reviewGraph(t))
}

func interruptedReviewOf(t *testing.T, wf *graph.Runnable) (*env, server.Run) {
	t.Helper()
	e := newEnv(t, server.Config{Workflows: workflows(wf), Recorder: recorder(t)})
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

// TestViewerReplaysAndForksFromACheckpointInChromium: each checkpoint of
// the thread has "Replay from here" and "Fork from here…" (issue 31, item
// 12): replay starts a run from it (POST /v1/threads/{t}/runs with
// "checkpoint") and the page shows that run; fork does the same with the
// input typed in, which the thread's state then holds. A bad input is
// said on the page and starts nothing.
func TestViewerReplaysAndForksFromACheckpointInChromium(t *testing.T) {
	e, _ := interruptedReviewOf(t, reviewGraphOf(t, 3))
	second := e.wait(alice, "r", map[string]any{"resume": feedback{Feedback: "Add a rollback step."}})
	require.Equal(t, "done", second.Status, "%+v", second.Error)
	var history server.History
	e.call("GET", "/v1/threads/r/history", alice, nil, http.StatusOK, &history)
	var input server.Snapshot // the checkpoint the input made: review is next
	for _, cp := range history.Checkpoints {
		if len(cp.Next) == 1 && cp.Next[0] == "review" && len(cp.Interrupts) == 0 {
			input = cp
		}
	}
	require.NotEmpty(t, input.Checkpoint)
	runsOf := func() []server.Run {
		var list struct {
			Runs []server.Run `json:"runs"`
		}
		e.call("GET", "/v1/threads/r/runs", alice, nil, http.StatusOK, &list)
		return list.Runs
	}
	known := map[string]bool{}
	for _, ru := range runsOf() {
		known[ru.ID] = true
	}
	// newRun waits for the page to show a run it did not show before, and
	// returns its id.
	newRun := func(ctx context.Context) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.WaitVisible(`#run-status[data-status="interrupted"]`)); err != nil {
			dbg, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Evaluate[string](`location.href + " | " + document.body.innerText.slice(0, 2000)`))
			t.Fatalf("%v: %s", err, dbg)
		}
		id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`new URLSearchParams(location.search).get("run")`))
		require.NoError(t, err)
		require.False(t, known[id], "the page shows the new run, not %s", id)
		known[id] = true
		return id
	}
	at := `#checkpoints details[data-checkpoint="` + input.Checkpoint + `"]`
	open := func(ctx context.Context) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Evaluate[*int](`document.querySelector('`+at+`').open = true, null`))
		require.NoError(t, err)
	}

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+second.ID+"#token="+alice),
		chromedp.WaitVisible(at),
	))
	open(ctx)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(at+` button.replay`)))
	replay := newRun(ctx)
	screenshot(t, ctx, "viewer-replayed.png")
	var got server.Run
	e.call("GET", "/v1/threads/r/runs/"+replay, alice, nil, http.StatusOK, &got)
	assert.Equal(t, "interrupted", got.Status, "the review step ran again and asks again")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+second.ID),
		chromedp.WaitVisible(at),
	))
	open(ctx)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(at+` button.fork-open`),
		chromedp.WaitVisible(at+` textarea.fork-input`),
		chromedp.SendKeys(at+` textarea.fork-input`, `{"question": `),
		chromedp.Click(at+` button.fork-run`),
		chromedp.WaitVisible(at+` .action-error`),
	))
	msg := text(t, ctx, at+` .action-error`)
	assert.Contains(t, msg, "The input is not JSON")
	assert.Len(t, runsOf(), len(known), "a bad input starts nothing")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(at+` textarea.fork-input`, `{"question": "Postgres or MySQL?"}`),
		chromedp.Click(at+` button.fork-run`),
	))
	fork := newRun(ctx)
	screenshot(t, ctx, "viewer-forked.png")
	e.call("GET", "/v1/threads/r/runs/"+fork, alice, nil, http.StatusOK, &got)
	assert.Equal(t, "interrupted", got.Status)
	var values map[string]any
	require.NoError(t, json.Unmarshal(e.state(alice, "r").Values, &values))
	assert.Equal(t, "Postgres or MySQL?", values["question"], "the fork's input is the thread's question now")
}
