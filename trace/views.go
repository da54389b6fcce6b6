package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
)

// ErrAgentNotFound: a run has no agent of that id.
var ErrAgentNotFound = errors.New("trace: agent not found")

// The statuses of a node or an agent in a Timeline.
const (
	ItemRunning    = "running"
	ItemDone       = "done"
	ItemFailed     = "failed"
	ItemUnfinished = "unfinished" // the run ended before it did
	// ItemWaiting: the node asked a question (graph.Interrupt) and the
	// run stopped to wait for the answer (Timeline.Interrupts).
	ItemWaiting = "waiting"
)

// Timeline outlines a run for the viewer: its steps in order, each with
// the nodes it ran and the agents that worked inside them.
type Timeline struct {
	Run   RunInfo        `json:"run"`
	Steps []TimelineStep `json:"steps"`
	// Usage sums the run's model calls: tokens and cost.
	Usage llm.Spend `json:"usage"`
	// Answer is the run's final answer, as the model wrote it (untrusted
	// Markdown): the AnswerChannel of its final state, or, when that holds
	// no text, the output of the last agent that ended with one.
	Answer string `json:"answer,omitempty"`
	// Interrupts are the questions the run stopped on (an interrupted
	// run), in the order asked; a resume run answers them.
	Interrupts []TimelineInterrupt `json:"interrupts,omitempty"`
	// LastSeq is the last event the timeline was built from.
	LastSeq int64 `json:"last_seq"`
}

// TimelineInterrupt is a question a node asked (graph.InterruptInfo):
// Payload is what it passed to graph.Interrupt, as JSON (the question,
// and what it asks about, such as a plan under review). A Payload of more
// than 256 KiB is cut as AgentDetail says.
type TimelineInterrupt struct {
	ID      string          `json:"id"`
	Node    string          `json:"node"`
	Path    string          `json:"path"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// AnswerChannel is the channel a Timeline reads a run's answer from: the
// output channel of workflow files unless they name another
// (workflows.File.OutputChannel), and nodes.Answer.
const AnswerChannel = "answer"

// TimelineStep is one step of a run. Start is when it started, End when
// its last node ended (nil while one runs).
type TimelineStep struct {
	Step  int            `json:"step"`
	Start time.Time      `json:"start"`
	End   *time.Time     `json:"end,omitempty"`
	Nodes []TimelineNode `json:"nodes"`
}

// TimelineNode is one task of a step: a node of the run's graph.
type TimelineNode struct {
	Node       string  `json:"node"`
	Path       string  `json:"path"`
	Status     string  `json:"status"`
	Attempt    int     `json:"attempt,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`
	Error      string  `json:"error,omitempty"`
	// Start is when the node started (its first attempt), End when it
	// ended (nil while it runs).
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end,omitempty"`
	// Created names the dynamic agents built in the node.
	Created []string       `json:"created,omitempty"`
	Agents  []AgentSummary `json:"agents"`
	// Usage sums the model calls of the node's agents.
	Usage llm.Spend `json:"usage"`
}

// AgentSummary is one run of an agent inside a node: an agent that
// reported its start, or a scope that made model calls or had a snapshot
// without one.
type AgentSummary struct {
	// ID identifies the agent within its run: the Seq of its first event.
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Path string `json:"path"`
	// Run is the agent's own run id (a plan step), if it gave one.
	Run              string `json:"run,omitempty"`
	Status           string `json:"status"`
	ModelCalls       int    `json:"model_calls"`
	ToolCalls        int    `json:"tool_calls"`
	Snapshots        int    `json:"snapshots"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	// Usage sums the agent's model calls: tokens and cost.
	Usage llm.Spend  `json:"usage"`
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end,omitempty"`
	// Summary is the start of its output, or its error.
	Summary string `json:"summary,omitempty"`
}

// AgentDetail is everything recorded of one agent run: what it was asked,
// what each of its model calls saw (snapshots), what the model answered
// and reasoned, the tools it called and what it answered in the end.
//
// Its size is bounded: each text (its role, task, output and error, a
// tool call's output, a model call's error, content, reasoning and tool
// call arguments, a warning) and each JSON value (a snapshot, a tool
// call's arguments) keeps at most 256 KiB, and all of them together at
// most 16 MiB, in the order the agent recorded them, the model calls'
// answers last. A text cut keeps its start, to a character's boundary,
// and ends with a line "[cut: the first N of M bytes are shown]" (the
// whole of it when nothing of the 16 MiB is left); a JSON value cut
// becomes a JSON string: the start of its text with that line.
type AgentDetail struct {
	AgentSummary
	Role  string   `json:"role,omitempty"`
	Tier  string   `json:"tier,omitempty"`
	Tools []string `json:"tools,omitempty"`
	Task  string   `json:"task,omitempty"`
	// Output is the agent's answer; Reasoning the reasoning its last model
	// call returned, if the provider gives one.
	Output     string           `json:"output,omitempty"`
	Reasoning  string           `json:"reasoning,omitempty"`
	Error      string           `json:"error,omitempty"`
	Snapshots  []SnapshotEntry  `json:"snapshots"`
	ModelCalls []ModelCallEntry `json:"model_calls"`
	ToolCalls  []ToolCallEntry  `json:"tool_calls"`
	Warnings   []string         `json:"warnings,omitempty"`
}

// SnapshotEntry is one context snapshot: the window.Snapshot JSON of a
// model call (parts with their tokens, omitted and truncated parts with
// the reason, policies applied).
type SnapshotEntry struct {
	Seq      int64           `json:"seq"`
	Time     time.Time       `json:"time"`
	Snapshot json.RawMessage `json:"snapshot"`
}

// ModelCallEntry is one model call and, when its response was recorded,
// what the model answered.
type ModelCallEntry struct {
	Seq              int64     `json:"seq"`
	Time             time.Time `json:"time"`
	Path             string    `json:"path"`
	Model            string    `json:"model,omitempty"`
	Tier             string    `json:"tier,omitempty"`
	PromptTokens     int       `json:"prompt_tokens"`
	CachedTokens     int       `json:"cached_tokens,omitempty"`
	CompletionTokens int       `json:"completion_tokens"`
	ReasoningTokens  int       `json:"reasoning_tokens,omitempty"`
	Estimated        bool      `json:"estimated,omitempty"`
	// CostUSD is nil when the model has no price.
	CostUSD    *float64      `json:"cost_usd,omitempty"`
	DurationMS float64       `json:"duration_ms"`
	Hash       string        `json:"hash,omitempty"`
	Replayed   bool          `json:"replayed,omitempty"`
	Error      string        `json:"error,omitempty"`
	Content    string        `json:"content,omitempty"`
	Reasoning  string        `json:"reasoning,omitempty"`
	ToolCalls  []ToolCallRef `json:"tool_calls,omitempty"`
}

// ToolCallRef is a tool call a model asked for.
type ToolCallRef struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCallEntry is one tool call and its result.
type ToolCallEntry struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Args       json.RawMessage `json:"args,omitempty"`
	Status     string          `json:"status,omitempty"`
	Output     string          `json:"output,omitempty"`
	DurationMS float64         `json:"duration_ms,omitempty"`
	Seq        int64           `json:"seq"`
	ResultSeq  int64           `json:"result_seq,omitempty"`
}

// viewKinds are the kinds of event the views are built from.
var viewKinds = []string{
	graph.EventRunStart.String(), graph.EventStepStart.String(), graph.EventNodeStart.String(), graph.EventNodeEnd.String(),
	agentevent.EventCreated, agentevent.EventStart, agentevent.EventEnd,
	llm.EventModelCall, agentevent.EventSnapshot, tools.EventToolCall,
	tools.EventToolResult, agentevent.EventWarning, graph.EventInterrupt.String(),
}

// viewPageBytes bounds a page of the events the views read (as
// Event.Size counts them): building a view holds one page of the run, or
// one larger event, at most.
const viewPageBytes = 1 << 20

// LoadTimeline reads run id from s and builds its Timeline. It reads the
// run's events a page at a time (1 MiB, or one larger event) and keeps
// no more of them than the Timeline shows.
func LoadTimeline(ctx context.Context, s Store, id string) (Timeline, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return Timeline{}, err
	}
	ix := newIndex(run, 0)
	if err := ix.read(ctx, s, id); err != nil {
		return Timeline{}, err
	}
	tl := ix.timeline()
	tl.LastSeq = max(tl.LastSeq, run.Events)
	return tl, nil
}

// LoadAgent reads run id from s and returns its agent agentID (an
// AgentSummary.ID), with the responses of its model calls. It reads the
// run's events, and then the agent's model calls with their bodies, a
// page at a time (1 MiB, or one larger event), and keeps only what the
// AgentDetail shows, cut as it says.
func LoadAgent(ctx context.Context, s Store, id string, agentID int64) (AgentDetail, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return AgentDetail{}, err
	}
	ix := newIndex(run, agentID)
	if err := ix.read(ctx, s, id); err != nil {
		return AgentDetail{}, err
	}
	a := ix.wanted
	if a == nil {
		return AgentDetail{}, fmt.Errorf("%w: run %q has no agent %d", ErrAgentNotFound, id, agentID)
	}
	q := EventQuery{Kinds: []string{llm.EventModelCall}, Path: a.sum.Path, After: a.first - 1, Until: a.last,
		Bodies: true, MaxBytes: viewPageBytes}
	for e, err := range AllEvents(ctx, s, id, q) {
		if err != nil {
			return AgentDetail{}, err
		}
		a.detail.body(e)
	}
	return a.detail.result(a), nil
}

// BuildTimeline builds the Timeline of run from its events, in Seq order.
func BuildTimeline(run RunInfo, events []Event) Timeline {
	ix := newIndex(run, 0)
	for _, e := range events {
		ix.add(e)
	}
	ix.finish()
	return ix.timeline()
}

// BuildAgent returns the agent agentID of run, built from its events in
// Seq order; model calls show what the model answered when their bodies
// are among the events. It cuts what it keeps as LoadAgent does.
func BuildAgent(run RunInfo, events []Event, agentID int64) (AgentDetail, bool) {
	ix := newIndex(run, agentID)
	for _, e := range events {
		ix.add(e)
	}
	ix.finish()
	a := ix.wanted
	if a == nil {
		return AgentDetail{}, false
	}
	for _, e := range events {
		if e.Kind == llm.EventModelCall && e.Response != nil {
			a.detail.body(e)
		}
	}
	return a.detail.result(a), true
}
