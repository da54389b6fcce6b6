package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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
// and what it asks about, such as a plan under review).
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

// LoadTimeline reads run id from s and builds its Timeline.
func LoadTimeline(ctx context.Context, s Store, id string) (Timeline, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return Timeline{}, err
	}
	events, err := s.Events(ctx, id, EventQuery{Kinds: viewKinds})
	if err != nil {
		return Timeline{}, err
	}
	tl := BuildTimeline(run, events)
	tl.LastSeq = max(tl.LastSeq, run.Events)
	return tl, nil
}

// LoadAgent reads run id from s and returns its agent agentID (an
// AgentSummary.ID), with the responses of its model calls.
func LoadAgent(ctx context.Context, s Store, id string, agentID int64) (AgentDetail, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return AgentDetail{}, err
	}
	events, err := s.Events(ctx, id, EventQuery{Kinds: viewKinds})
	if err != nil {
		return AgentDetail{}, err
	}
	ix := index(run, events)
	a := ix.agent(agentID)
	if a == nil {
		return AgentDetail{}, fmt.Errorf("%w: run %q has no agent %d", ErrAgentNotFound, id, agentID)
	}
	calls, err := s.Events(ctx, id, EventQuery{Kinds: []string{llm.EventModelCall}, Path: a.sum.Path,
		After: a.first - 1, Until: a.last, Bodies: true})
	if err != nil {
		return AgentDetail{}, err
	}
	bodies := make(map[int64]Event, len(calls))
	for _, c := range calls {
		bodies[c.Seq] = c
	}
	return a.detail(bodies), nil
}

// BuildTimeline builds the Timeline of run from its events, in Seq order.
func BuildTimeline(run RunInfo, events []Event) Timeline {
	return index(run, events).timeline()
}

// BuildAgent returns the agent agentID of run, built from its events in
// Seq order; model calls show what the model answered when their bodies
// are among the events.
func BuildAgent(run RunInfo, events []Event, agentID int64) (AgentDetail, bool) {
	a := index(run, events).agent(agentID)
	if a == nil {
		return AgentDetail{}, false
	}
	bodies := map[int64]Event{}
	for _, e := range a.events {
		if e.Kind == llm.EventModelCall && e.Response != nil {
			bodies[e.Seq] = e
		}
	}
	return a.detail(bodies), true
}

// indexed is a run's events sorted into steps, nodes and agents.
type indexed struct {
	run     RunInfo
	root    string
	steps   []*stepEntry
	byStep  map[int]*stepEntry
	current map[string]*nodeEntry  // the latest node of each label
	open    map[string]*agentEntry // agents not ended, by path
	agents  []*agentEntry
	lastSeq int64
	// interrupts are the questions asked, once each (a subgraph's run
	// reports its questions again to its parent).
	interrupts []TimelineInterrupt
	asked      map[string]*nodeEntry // the node of each question, by id
}

type stepEntry struct {
	step  int
	start time.Time
	nodes []*nodeEntry
}

type nodeEntry struct {
	TimelineNode
	step   int
	agents []*agentEntry
}

type agentEntry struct {
	sum     AgentSummary
	node    *nodeEntry
	started bool // by an agent_start event
	ended   bool
	first   int64
	last    int64
	events  []Event
}

func index(run RunInfo, events []Event) *indexed {
	ix := &indexed{
		run: run, root: run.Graph, byStep: map[int]*stepEntry{}, current: map[string]*nodeEntry{},
		open: map[string]*agentEntry{}, asked: map[string]*nodeEntry{},
	}
	for _, e := range events {
		ix.add(e)
	}
	for _, a := range ix.agents {
		if !a.ended {
			a.sum.Status = ItemRunning
			if run.Status != StatusRunning {
				a.sum.Status = ItemUnfinished
			}
		}
	}
	// A node that asked a question waits for its answer, and so do its
	// agents that did not fail.
	for _, n := range ix.asked {
		if n == nil {
			continue
		}
		n.Status, n.Error = ItemWaiting, ""
		for _, a := range n.agents {
			if a.sum.Status != ItemFailed {
				a.sum.Status = ItemWaiting
			}
		}
	}
	return ix
}

func (ix *indexed) add(e Event) {
	ix.lastSeq = max(ix.lastSeq, e.Seq)
	if e.Kind == graph.EventRunStart.String() && ix.root == "" {
		ix.root = e.Path
	}
	label, depth1 := ix.label(e.Path)
	switch e.Kind {
	case graph.EventStepStart.String():
		if e.Path == ix.root {
			ix.step(e.Step).start = e.Time
		}
	case graph.EventNodeStart.String():
		if depth1 {
			ix.nodeStart(label, e)
		}
	case graph.EventNodeEnd.String():
		if depth1 {
			ix.nodeEnd(label, e)
		}
	case agentevent.EventCreated:
		var ae agentevent.Info
		_ = json.Unmarshal(e.Payload, &ae)
		n := ix.node(label, e)
		n.Created = append(n.Created, ae.Agent)
	case agentevent.EventStart:
		a := ix.open[e.Path]
		if a == nil || a.started {
			a = ix.newAgent(label, e)
		}
		a.started = true
		a.attach(e)
	case agentevent.EventEnd:
		a := ix.open[e.Path]
		if a == nil {
			a = ix.newAgent(label, e)
		}
		a.attach(e)
		delete(ix.open, e.Path)
	case llm.EventModelCall, agentevent.EventSnapshot, tools.EventToolCall, tools.EventToolResult:
		a := ix.owner(e.Path)
		if a == nil {
			a = ix.newAgent(label, e)
		}
		a.attach(e)
	case agentevent.EventWarning:
		if a := ix.owner(e.Path); a != nil {
			a.attach(e)
		}
	case graph.EventInterrupt.String():
		ix.interrupt(e)
	}
}

// interrupt records the questions of an interrupt event and the nodes
// that asked them.
func (ix *indexed) interrupt(e Event) {
	var asked []TimelineInterrupt
	if json.Unmarshal(e.Payload, &asked) != nil {
		return
	}
	for _, in := range asked {
		if _, seen := ix.asked[in.ID]; seen {
			continue
		}
		label, _ := ix.label(in.Path)
		ix.asked[in.ID] = ix.current[label]
		ix.interrupts = append(ix.interrupts, in)
	}
}

// label returns the top-level node label of path (the segment after the
// root) and whether path is exactly root/label.
func (ix *indexed) label(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, ix.root+"/")
	if !ok || ix.root == "" {
		return "", false
	}
	label, _, nested := strings.Cut(rest, "/")
	return label, !nested
}

func (ix *indexed) step(n int) *stepEntry {
	s := ix.byStep[n]
	if s == nil {
		s = &stepEntry{step: n}
		ix.byStep[n] = s
		ix.steps = append(ix.steps, s)
	}
	return s
}

func (ix *indexed) nodeStart(label string, e Event) {
	if n := ix.current[label]; n != nil && n.Path == e.Path && n.step == e.Step {
		n.Attempt, n.Status = max(n.Attempt, e.Attempt), ItemRunning
		return
	}
	name := e.Node
	if name == "" {
		name = label
	}
	s := ix.step(e.Step)
	n := &nodeEntry{TimelineNode: TimelineNode{Node: name, Path: e.Path, Status: ItemRunning, Attempt: e.Attempt, Start: e.Time}, step: e.Step}
	s.nodes = append(s.nodes, n)
	ix.current[label] = n
}

func (ix *indexed) nodeEnd(label string, e Event) {
	n := ix.node(label, e)
	n.Status, n.Error, n.Attempt = ItemDone, e.Error, max(n.Attempt, e.Attempt)
	if e.Error != "" {
		n.Status = ItemFailed
	}
	n.DurationMS = float64(e.Duration) / float64(time.Millisecond)
	end := e.Time
	n.End = &end
	// What is still open inside the node ended with it. An agent that
	// never reported its start (a scope that made model calls) ended with
	// its last event.
	for path, a := range ix.open {
		if a.node == n {
			a.ended, a.sum.Status = true, n.Status
			if a.sum.End == nil {
				t := e.Time
				if !a.started && len(a.events) > 0 {
					t = a.events[len(a.events)-1].Time
				}
				a.sum.End = &t
			}
			delete(ix.open, path)
		}
	}
}

// node returns the current node of label, or one made up for events that
// came without a node start (events at the root, or a recording that
// starts in the middle).
func (ix *indexed) node(label string, e Event) *nodeEntry {
	if n := ix.current[label]; n != nil {
		return n
	}
	path := ix.root
	if label != "" {
		path += "/" + label
	}
	n := &nodeEntry{TimelineNode: TimelineNode{Node: label, Path: path, Status: ItemRunning, Start: e.Time}, step: e.Step}
	if label == "" {
		n.Node = ix.root
	}
	s := ix.step(e.Step)
	s.nodes = append(s.nodes, n)
	ix.current[label] = n
	return n
}

// owner returns the open agent whose path is the longest prefix of path.
func (ix *indexed) owner(path string) *agentEntry {
	for p := path; ; {
		if a := ix.open[p]; a != nil {
			return a
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return nil
		}
		p = p[:i]
	}
}

func (ix *indexed) newAgent(label string, e Event) *agentEntry {
	name := e.Agent
	if name == "" {
		name = e.Path[strings.LastIndexByte(e.Path, '/')+1:]
		name = strings.TrimPrefix(name, "agent:")
	}
	start := e.Time
	if e.Kind == llm.EventModelCall {
		// Recorded when the call ended: it started Duration before.
		var mc llm.ModelCall
		if json.Unmarshal(e.Payload, &mc) == nil {
			start = start.Add(-mc.Duration)
		}
	}
	a := &agentEntry{
		sum:   AgentSummary{ID: e.Seq, Name: name, Path: e.Path, Status: ItemRunning, Start: start},
		node:  ix.node(label, e),
		first: e.Seq,
	}
	a.node.agents = append(a.node.agents, a)
	ix.agents = append(ix.agents, a)
	ix.open[e.Path] = a
	return a
}

func (ix *indexed) agent(id int64) *agentEntry {
	for _, a := range ix.agents {
		if a.sum.ID == id {
			return a
		}
	}
	return nil
}

// attach adds e to the agent and updates its summary.
func (a *agentEntry) attach(e Event) {
	a.events = append(a.events, e)
	a.last = e.Seq
	switch e.Kind {
	case agentevent.EventStart:
		var ae agentevent.Info
		_ = json.Unmarshal(e.Payload, &ae)
		if ae.Agent != "" {
			a.sum.Name = ae.Agent
		}
		a.sum.Run = ae.Run
	case agentevent.EventEnd:
		var ae agentevent.Info
		_ = json.Unmarshal(e.Payload, &ae)
		a.ended, a.sum.Status = true, ItemDone
		a.sum.Summary = summarize(ae.Output)
		if ae.Err != "" {
			a.sum.Status, a.sum.Summary = ItemFailed, summarize(ae.Err)
		}
		t := e.Time
		a.sum.End = &t
	case llm.EventModelCall:
		var mc llm.ModelCall
		_ = json.Unmarshal(e.Payload, &mc)
		a.sum.ModelCalls++
		a.sum.PromptTokens += mc.PromptTokens
		a.sum.CompletionTokens += mc.CompletionTokens
		a.sum.Usage.Add(mc)
	case agentevent.EventSnapshot:
		a.sum.Snapshots++
	case tools.EventToolCall:
		a.sum.ToolCalls++
	}
}

// summarize returns the first line of s, cut to 120 characters.
func summarize(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 120 {
		return string(r[:119]) + "…"
	}
	return s
}

func (ix *indexed) timeline() Timeline {
	tl := Timeline{Run: ix.run, Steps: make([]TimelineStep, 0, len(ix.steps)), LastSeq: ix.lastSeq}
	for _, s := range ix.steps {
		ts := TimelineStep{Step: s.step, Start: s.start, Nodes: make([]TimelineNode, 0, len(s.nodes))}
		for _, n := range s.nodes {
			if ts.Start.IsZero() || n.Start.Before(ts.Start) {
				ts.Start = n.Start
			}
			tn := n.TimelineNode
			tn.Agents = make([]AgentSummary, 0, len(n.agents))
			for _, a := range n.agents {
				tn.Agents = append(tn.Agents, a.sum)
				tn.Usage.Merge(a.sum.Usage)
			}
			tl.Usage.Merge(tn.Usage)
			if tn.Status == ItemRunning && ix.run.Status != StatusRunning {
				tn.Status = ItemUnfinished
			}
			ts.Nodes = append(ts.Nodes, tn)
		}
		ts.End = stepEnd(ts.Nodes)
		tl.Steps = append(tl.Steps, ts)
	}
	tl.Answer = ix.answer()
	tl.Interrupts = ix.interrupts
	return tl
}

// stepEnd is when the last of a step's nodes ended, or nil while one
// runs (or none ran).
func stepEnd(nodes []TimelineNode) *time.Time {
	var end *time.Time
	for _, n := range nodes {
		if n.End == nil {
			return nil
		}
		if end == nil || n.End.After(*end) {
			end = n.End
		}
	}
	return end
}

// answer is the run's final answer: the text of its AnswerChannel, else
// the output of the last agent that ended with one.
func (ix *indexed) answer() string {
	var final map[string]json.RawMessage
	if json.Unmarshal(ix.run.FinalState, &final) == nil {
		var s string
		if json.Unmarshal(final[AnswerChannel], &s) == nil && strings.TrimSpace(s) != "" {
			return s
		}
	}
	for _, a := range slices.Backward(ix.agents) {
		for _, e := range slices.Backward(a.events) {
			if e.Kind != agentevent.EventEnd {
				continue
			}
			var ae agentevent.Info
			if json.Unmarshal(e.Payload, &ae) == nil && ae.Output != "" {
				return ae.Output
			}
		}
	}
	return ""
}

// recordedResponse is the part of a recorded model response (llm's
// journal record of the choices) that the viewer shows.
type recordedResponse []struct {
	Content   string `json:"content"`
	Reasoning string `json:"reasoning"`
	ToolCalls []struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"tool_calls"`
}

// detail builds the agent's detail; bodies holds model calls with their
// request and response, by Seq.
func (a *agentEntry) detail(bodies map[int64]Event) AgentDetail {
	d := AgentDetail{AgentSummary: a.sum, Snapshots: []SnapshotEntry{}, ModelCalls: []ModelCallEntry{}, ToolCalls: []ToolCallEntry{}}
	calls := map[string]int{} // tool call id -> index in d.ToolCalls
	for _, e := range a.events {
		switch e.Kind {
		case agentevent.EventStart:
			var ae agentevent.Info
			_ = json.Unmarshal(e.Payload, &ae)
			d.Role, d.Tier, d.Tools, d.Task = ae.Role, ae.Tier, ae.Tools, ae.Task
		case agentevent.EventEnd:
			var ae agentevent.Info
			_ = json.Unmarshal(e.Payload, &ae)
			d.Output, d.Error = ae.Output, ae.Err
		case agentevent.EventSnapshot:
			d.Snapshots = append(d.Snapshots, SnapshotEntry{Seq: e.Seq, Time: e.Time, Snapshot: e.Payload})
		case llm.EventModelCall:
			d.ModelCalls = append(d.ModelCalls, modelCallEntry(e, bodies[e.Seq]))
		case tools.EventToolCall:
			var tc tools.CallEvent
			_ = json.Unmarshal(e.Payload, &tc)
			calls[tc.ID] = len(d.ToolCalls)
			d.ToolCalls = append(d.ToolCalls, ToolCallEntry{ID: tc.ID, Name: tc.Name, Args: tc.Args, Seq: e.Seq})
		case tools.EventToolResult:
			var tr tools.ResultEvent
			_ = json.Unmarshal(e.Payload, &tr)
			i, ok := calls[tr.ID]
			if !ok {
				i = len(d.ToolCalls)
				d.ToolCalls = append(d.ToolCalls, ToolCallEntry{ID: tr.ID, Name: tr.Name, Seq: e.Seq})
			}
			tc := &d.ToolCalls[i]
			tc.Status, tc.Output, tc.ResultSeq = tr.Status, tr.Output, e.Seq
			tc.DurationMS = float64(tr.Duration) / float64(time.Millisecond)
		case agentevent.EventWarning:
			var s string
			if json.Unmarshal(e.Payload, &s) != nil {
				s = string(e.Payload)
			}
			d.Warnings = append(d.Warnings, s)
		}
	}
	if n := len(d.ModelCalls); n > 0 {
		last := d.ModelCalls[n-1]
		d.Reasoning = last.Reasoning
		if !a.started && d.Output == "" {
			d.Output = last.Content
		}
	}
	return d
}

func modelCallEntry(e, body Event) ModelCallEntry {
	var mc llm.ModelCall
	_ = json.Unmarshal(e.Payload, &mc)
	m := ModelCallEntry{
		Seq: e.Seq, Time: e.Time, Path: e.Path, Model: mc.Model, Tier: mc.Tier, PromptTokens: mc.PromptTokens,
		CachedTokens: mc.CachedTokens, ReasoningTokens: mc.ReasoningTokens, Estimated: mc.Estimated, CostUSD: mc.CostUSD,
		CompletionTokens: mc.CompletionTokens, DurationMS: float64(mc.Duration) / float64(time.Millisecond),
		Hash: e.Hash, Replayed: mc.Replayed, Error: mc.Err,
	}
	var resp recordedResponse
	if len(body.Response) > 0 && json.Unmarshal(body.Response, &resp) == nil && len(resp) > 0 {
		m.Content, m.Reasoning = resp[0].Content, resp[0].Reasoning
		for _, tc := range resp[0].ToolCalls {
			m.ToolCalls = append(m.ToolCalls, ToolCallRef{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
	}
	return m
}
