package nodes

import (
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes/plan"
)

// ChatMessage is one message of the conversation as the user sees it.
type ChatMessage struct {
	Role    string `json:"role"` // "user" or "assistant"
	Content string `json:"content"`
}

// The channels the prebuilt nodes read and write. A workflow that uses
// these nodes declares them (Channels returns them all).
var (
	// Input is the user's latest message.
	Input = graph.NewKey[string]("input")
	// Messages is the conversation: user messages and final answers, never
	// the agents' work.
	Messages = graph.NewKey("messages", graph.Append[ChatMessage]())
	// Request is the task as the coordinator handed it off: what the
	// planner works on, without the small talk around it.
	Request = graph.NewKey[string]("request")
	// Locale is the user's language (en-US, zh-CN...).
	Locale = graph.NewKey[string]("locale")
	// Background holds what the background investigator found.
	Background = graph.NewKey[string]("background")
	// PlanKey is the current plan, with the results of its steps.
	PlanKey = graph.NewKey[*plan.Plan]("plan")
	// Iterations counts the planner's rounds in this turn: plans made
	// from the request and the results so far, not the revisions a
	// reviewer asked for. The coordinator sets it back to 0 when a turn
	// begins.
	Iterations = graph.NewKey("plan_iterations", graph.Sum[int]())
	// Feedback is what the reviewer asked the planner to change.
	Feedback = graph.NewKey[string]("feedback")
	// CurrentStep is the id of the step a research-team worker runs.
	CurrentStep = graph.NewKey[string]("current_step")
	// Findings accumulates the results of every step of every plan of the
	// thread, each marked with its turn (AddFindings): the current turn's
	// are this request's results, the earlier ones what the conversation
	// found before.
	Findings = graph.NewKey("findings", graph.Append[plan.Finding]())
	// Answer is the final answer: the report, or the coordinator's own
	// reply to small talk.
	Answer = graph.NewKey[string]("answer")
	// CurrentTurn is the turn under way, or the last one once it ended.
	CurrentTurn = graph.NewKey[Turn]("turn")
	// Turns lists the thread's finished turns, each with its answer in
	// one line: the conversation in summary.
	Turns = graph.NewKey("turns", graph.Append[Turn]())
)

// Channels returns every channel the prebuilt nodes use.
func Channels() []graph.Channel {
	return []graph.Channel{Input, Messages, Request, Locale, Background, PlanKey, Iterations, Feedback, CurrentStep, Findings, Answer,
		CurrentTurn, Turns}
}
