package trace

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
)

// indexed sorts a run's events, fed one at a time (add), into steps,
// nodes and agents. It keeps no event: an agent's summary, and the detail
// of the one agent asked for (want), are built as the events come.
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
	// want is the ID of the agent whose detail is built (0: none), wanted
	// that agent once seen.
	want   int64
	wanted *agentEntry
	// answer is the output of the latest agent (in the order they came)
	// that ended with one, answerBy that agent's place in agents.
	answer   string
	answerBy int
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
	at      int  // its place in indexed.agents
	started bool // by an agent_start event
	ended   bool
	first   int64
	last    int64
	// lastTime is the time of its latest event.
	lastTime time.Time
	// detail is built for the agent asked for only.
	detail *detailBuilder
}

// newIndex returns an empty index of run that builds the detail of agent
// want (0: of none).
func newIndex(run RunInfo, want int64) *indexed {
	return &indexed{
		run: run, root: run.Graph, byStep: map[int]*stepEntry{}, current: map[string]*nodeEntry{},
		open: map[string]*agentEntry{}, asked: map[string]*nodeEntry{}, want: want, answerBy: -1,
	}
}

// read adds the events of run id the views are built from, reading them
// from s a page at a time, and finishes the index.
func (ix *indexed) read(ctx context.Context, s Store, id string) error {
	for e, err := range AllEvents(ctx, s, id, EventQuery{Kinds: viewKinds, MaxBytes: viewPageBytes}) {
		if err != nil {
			return err
		}
		ix.add(e)
	}
	ix.finish()
	return nil
}

// finish sets the statuses that the whole run decides: of agents that
// did not end, and of the nodes and agents waiting for an answer.
func (ix *indexed) finish() {
	for _, a := range ix.agents {
		if !a.ended {
			a.sum.Status = ItemRunning
			if ix.run.Status != StatusRunning {
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
		ix.attach(a, e)
	case agentevent.EventEnd:
		a := ix.open[e.Path]
		if a == nil {
			a = ix.newAgent(label, e)
		}
		ix.attach(a, e)
		delete(ix.open, e.Path)
	case llm.EventModelCall, agentevent.EventSnapshot, tools.EventToolCall, tools.EventToolResult:
		a := ix.owner(e.Path)
		if a == nil {
			a = ix.newAgent(label, e)
		}
		ix.attach(a, e)
	case agentevent.EventWarning:
		if a := ix.owner(e.Path); a != nil {
			ix.attach(a, e)
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
		in.Payload = cutJSON(in.Payload, maxViewText)
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
				if !a.started {
					t = a.lastTime
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
		at:    len(ix.agents),
		first: e.Seq,
	}
	if ix.want != 0 && e.Seq == ix.want && ix.wanted == nil {
		a.detail = newDetailBuilder()
		ix.wanted = a
	}
	a.node.agents = append(a.node.agents, a)
	ix.agents = append(ix.agents, a)
	ix.open[e.Path] = a
	return a
}

// attach adds e to agent a: its summary, its detail if it is the agent
// asked for, and the run's answer if a is the latest agent to end with
// an output.
func (ix *indexed) attach(a *agentEntry, e Event) {
	a.last, a.lastTime = e.Seq, e.Time
	if a.detail != nil {
		a.detail.add(e)
	}
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
		if ae.Output != "" && a.at >= ix.answerBy {
			ix.answer, ix.answerBy = ae.Output, a.at
		}
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
	tl.Answer = ix.finalAnswer()
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

// finalAnswer is the run's final answer: the text of its AnswerChannel,
// else the output of the last agent that ended with one.
func (ix *indexed) finalAnswer() string {
	var final map[string]json.RawMessage
	if json.Unmarshal(ix.run.FinalState, &final) == nil {
		var s string
		if json.Unmarshal(final[AnswerChannel], &s) == nil && strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ix.answer
}
