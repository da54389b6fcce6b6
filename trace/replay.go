package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
)

// ErrNotReplayable: the run did not start from an input (it resumed or
// continued a thread), so there is nothing to run it again from.
var ErrNotReplayable = errors.New("trace: run cannot be replayed")

// DivergenceKind says how a replay differed from its recording.
type DivergenceKind string

// The kinds of divergence.
const (
	// DivergedRequest: a model call asked something else than the
	// recorded call at its place (its request hash differs).
	DivergedRequest DivergenceKind = "request"
	// DivergedUnrecorded: a model call the recording has no call for.
	DivergedUnrecorded DivergenceKind = "unrecorded_call"
	// DivergedMissingCall: a recorded model call the replay did not make.
	DivergedMissingCall DivergenceKind = "missing_call"
	// DivergedToolResult: a tool answered a call otherwise.
	DivergedToolResult DivergenceKind = "tool_result"
	// DivergedStatus: the replay ended otherwise (done, interrupted,
	// error).
	DivergedStatus DivergenceKind = "status"
	// DivergedState: a channel's final value differs.
	DivergedState DivergenceKind = "state"
)

// Divergence is one way a replay differed from its recording, and where.
type Divergence struct {
	Kind DivergenceKind `json:"kind"`
	// Path is the event path of the model or tool call (the agent's
	// scope); Agent its label.
	Path  string `json:"path,omitempty"`
	Agent string `json:"agent,omitempty"`
	// Call numbers the model call among its path's calls, from 1.
	Call int `json:"call,omitempty"`
	// Seq is the recorded event concerned, if any.
	Seq int64 `json:"seq,omitempty"`
	// Channel is the channel whose final value differs (state).
	Channel string `json:"channel,omitempty"`
	// Want is what was recorded, Got what the replay did: request hashes,
	// tool outputs, statuses, channel values.
	Want   string `json:"want,omitempty"`
	Got    string `json:"got,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// String says what diverged and where, in one line.
func (d Divergence) String() string {
	var b strings.Builder
	switch d.Kind {
	case DivergedRequest:
		fmt.Fprintf(&b, "model call %d of %s asked something else (request %s, recorded %s)", d.Call, d.Path, d.Got, d.Want)
	case DivergedUnrecorded:
		fmt.Fprintf(&b, "model call %d of %s was not recorded", d.Call, d.Path)
	case DivergedMissingCall:
		fmt.Fprintf(&b, "recorded model call %d of %s was not made", d.Call, d.Path)
	case DivergedToolResult:
		fmt.Fprintf(&b, "tool call at %s answered otherwise", d.Path)
	case DivergedStatus:
		fmt.Fprintf(&b, "the run ended %s, recorded %s", d.Got, d.Want)
	case DivergedState:
		fmt.Fprintf(&b, "channel %q ended with another value", d.Channel)
	default:
		fmt.Fprintf(&b, "%s at %s", d.Kind, d.Path)
	}
	if d.Detail != "" {
		b.WriteString(": " + d.Detail)
	}
	return b.String()
}

// Report is the outcome of a Replay.
type Report struct {
	RunID string `json:"run_id"`
	// Status is how the replay ended; RecordedStatus how the run did.
	Status         string `json:"status"`
	RecordedStatus string `json:"recorded_status"`
	// RecordedCalls counts the model calls on the cassette; ReplayedCalls
	// those it answered.
	RecordedCalls int `json:"recorded_calls"`
	ReplayedCalls int `json:"replayed_calls"`
	// FinalState is the replay's final state (done or interrupted).
	FinalState json.RawMessage `json:"final_state,omitempty"`
	// Error is why the replay failed, if it did.
	Error string `json:"error,omitempty"`
	// Divergences are in the order they happened: the first is where the
	// replay left the recording.
	Divergences []Divergence `json:"divergences"`
}

// OK reports whether the replay reproduced the recording.
func (r Report) OK() bool { return len(r.Divergences) == 0 }

// String summarizes the report, one divergence per line.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "replay of run %s: %s (recorded %s), %d of %d model calls answered from the recording",
		r.RunID, r.Status, r.RecordedStatus, r.ReplayedCalls, r.RecordedCalls)
	if r.OK() {
		b.WriteString("; no divergence")
		return b.String()
	}
	if len(r.Divergences) == 1 {
		b.WriteString("; 1 divergence:")
	} else {
		fmt.Fprintf(&b, "; %d divergences:", len(r.Divergences))
	}
	for i, d := range r.Divergences {
		fmt.Fprintf(&b, "\n%d. %s", i+1, d)
	}
	return b.String()
}

// ReplayOption changes how Replay runs.
type ReplayOption func(*replayConfig)

type replayConfig struct {
	input    []graph.Write
	inputSet bool
	ignore   map[string]bool
	opts     []graph.Option
}

// WithInput replays the run with another input than the recorded one, to
// see where a change makes it diverge.
func WithInput(writes ...graph.Write) ReplayOption {
	return func(c *replayConfig) { c.input, c.inputSet = graph.Input(writes...), true }
}

// IgnoreChannels leaves channels out of the comparison of final states
// (values that differ from run to run by design, such as timestamps).
func IgnoreChannels(names ...string) ReplayOption {
	return func(c *replayConfig) {
		for _, n := range names {
			c.ignore[n] = true
		}
	}
}

// WithRunOptions passes options to the replayed run (graph.StepLimit,
// graph.MaxConcurrency...). A saver is not needed.
func WithRunOptions(opts ...graph.Option) ReplayOption {
	return func(c *replayConfig) { c.opts = append(c.opts, opts...) }
}

// Replay runs r again, offline, from the input of the run cas plays, and
// reports how it differs from the recording. r must be built with cas as
// its models (cas.Models, or cas as every agent's model), and with fresh
// stores: an agent registry that already holds the recorded run's agents
// would skip building them. Tools run for real; their results are compared
// with the recorded ones.
//
// The replay runs without a saver under the recorded thread id and
// runtime values. It compares each model call with the recorded call at
// the same path and position (see Cassette), the tool results, how the run
// ended and its final state, channel by channel. A divergence is not an
// error: the error is for a replay that could not run (a run that did not
// start from an input, an input the graph does not take, a cancelled ctx,
// a recorded call or tool result the store could not give; then the
// Report says how far the replay went).
func Replay(ctx context.Context, r *graph.Runnable, cas *Cassette, opts ...ReplayOption) (Report, error) {
	cfg := replayConfig{ignore: map[string]bool{}}
	for _, o := range opts {
		o(&cfg)
	}
	run := cas.rec.Run
	input, runOpts, err := replaySetup(r, run, cfg)
	if err != nil {
		return Report{}, err
	}
	cas.Rewind()
	rep := Report{RunID: run.ID, RecordedStatus: run.Status, RecordedCalls: cas.recorded(), Divergences: []Divergence{}}
	var got replayed
	var runErr error
	for ev, err := range r.Stream(ctx, input, runOpts...) {
		got.observe(ev)
		if err != nil {
			runErr = err
		}
	}
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("trace: replay run %q: %w", run.ID, err)
	}
	rep.Status, rep.FinalState = got.status, got.state
	if runErr != nil {
		rep.Status, rep.Error = StatusError, runErr.Error()
	}
	rep.ReplayedCalls = cas.Answered()
	if err := cas.failure(); err != nil {
		return rep, err
	}
	if err := rep.compare(ctx, cas, got, cfg.ignore); err != nil {
		return rep, fmt.Errorf("trace: replay run %q: %w", run.ID, err)
	}
	return rep, nil
}

// replaySetup checks that run can be replayed with r and returns the input
// and the options of the replay.
func replaySetup(r *graph.Runnable, run RunInfo, cfg replayConfig) ([]graph.Write, []graph.Option, error) {
	if run.Graph != "" && run.Graph != r.Name() {
		return nil, nil, fmt.Errorf("trace: replay run %q: it ran graph %q, not %q", run.ID, run.Graph, r.Name())
	}
	input := cfg.input
	if !cfg.inputSet {
		if run.Start != StartInput {
			return nil, nil, fmt.Errorf("%w: run %q started with %s, not an input; replay the run that started its thread",
				ErrNotReplayable, run.ID, run.Start)
		}
		var err error
		if input, err = DecodeInput(r, run.Input); err != nil {
			return nil, nil, fmt.Errorf("trace: replay run %q: %w", run.ID, err)
		}
	}
	opts := []graph.Option{graph.Events(graph.EventRunStart, graph.EventRunEnd, graph.EventError), graph.CustomEvents(tools.EventToolResult)}
	if run.GraphThread != "" {
		opts = append(opts, graph.Thread(run.GraphThread))
	}
	if len(run.Runtime) > 0 {
		values := make(map[string]any, len(run.Runtime))
		for k, v := range run.Runtime {
			values[k] = v
		}
		opts = append(opts, graph.WithRuntime(values))
	}
	return input, append(opts, cfg.opts...), nil
}

// compare adds to the report how the replay differed from the recording:
// the calls the cassette could not answer, the recorded calls it was not
// asked for, tool results, the status and the final state. The error is
// a recorded tool result that could not be read.
func (rep *Report) compare(ctx context.Context, cas *Cassette, got replayed, ignore map[string]bool) error {
	run := cas.rec.Run
	rep.Divergences = append(rep.Divergences, cas.Divergences()...)
	diverged := map[string]bool{}
	for _, d := range rep.Divergences {
		diverged[d.Path] = true
	}
	for _, x := range cas.unused() {
		if !diverged[x.path] { // after a divergence the rest of the path is moot
			rep.Divergences = append(rep.Divergences, Divergence{Kind: DivergedMissingCall, Path: x.path, Agent: x.agent,
				Call: x.call, Seq: x.seq, Want: x.hash})
		}
	}
	toolDivs, err := compareTools(cas.Events(ctx, EventQuery{Kinds: []string{tools.EventToolResult}}), got.results)
	if err != nil {
		return err
	}
	rep.Divergences = append(rep.Divergences, toolDivs...)
	if rep.Status != run.Status {
		rep.Divergences = append(rep.Divergences, Divergence{Kind: DivergedStatus, Want: run.Status, Got: rep.Status, Detail: rep.Error})
	}
	if run.FinalState != nil && rep.FinalState != nil {
		rep.Divergences = append(rep.Divergences, compareStates(run.FinalState, rep.FinalState, ignore)...)
	}
	return nil
}

// replayed is what a replay's events tell.
type replayed struct {
	root    string
	status  string
	state   json.RawMessage
	results map[string]tools.ResultEvent // tool results, by path and call id
}

func (g *replayed) observe(ev graph.Event) {
	switch ev.Kind {
	case graph.EventRunStart:
		if g.root == "" {
			g.root = ev.Path
		}
	case graph.EventRunEnd:
		if ev.Path == g.root {
			if st, ok := ev.Data.(graph.Status); ok {
				g.status = string(st)
			}
			g.state, _ = json.Marshal(ev.State)
		}
	case graph.EventCustom:
		if tr, ok := ev.Data.(tools.ResultEvent); ok {
			if g.results == nil {
				g.results = map[string]tools.ResultEvent{}
			}
			g.results[ev.Path+"|"+tr.ID] = tr
		}
	}
}

// compareTools reports the recorded tool calls that the replay also made
// (same path, same call id) and that answered otherwise; recorded yields
// the recorded tool results.
func compareTools(recorded iter.Seq2[Event, error], got map[string]tools.ResultEvent) ([]Divergence, error) {
	var out []Divergence
	for e, err := range recorded {
		if err != nil {
			return nil, fmt.Errorf("read the recorded tool results: %w", err)
		}
		if e.Kind != tools.EventToolResult {
			continue
		}
		var want tools.ResultEvent
		if json.Unmarshal(e.Payload, &want) != nil {
			continue
		}
		g, ok := got[e.Path+"|"+want.ID]
		if !ok || (g.Status == want.Status && g.Output == want.Output) {
			continue
		}
		out = append(out, Divergence{Kind: DivergedToolResult, Path: e.Path, Agent: want.Agent, Seq: e.Seq,
			Want: clip(want.Status + ": " + want.Output), Got: clip(g.Status + ": " + g.Output),
			Detail: fmt.Sprintf("tool %s, call %s", want.Name, want.ID)})
	}
	return out, nil
}

// compareStates reports the channels whose final values differ.
func compareStates(want, got json.RawMessage, ignore map[string]bool) []Divergence {
	var w, g map[string]json.RawMessage
	if json.Unmarshal(want, &w) != nil || json.Unmarshal(got, &g) != nil {
		if !jsonEqual(want, got) {
			return []Divergence{{Kind: DivergedState, Want: clip(string(want)), Got: clip(string(got))}}
		}
		return nil
	}
	keys := slices.Sorted(maps.Keys(w))
	for k := range g {
		if _, ok := w[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []Divergence
	for _, k := range keys {
		if ignore[k] || jsonEqual(w[k], g[k]) {
			continue
		}
		out = append(out, Divergence{Kind: DivergedState, Channel: k, Want: clip(string(w[k])), Got: clip(string(g[k]))})
	}
	return out
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(x, y)
}

// clip cuts s to 300 characters.
func clip(s string) string {
	if r := []rune(s); len(r) > 300 {
		return string(r[:299]) + "…"
	}
	return s
}

// diffRequests says where a replayed request first differs from the
// recorded one.
func diffRequests(want, got json.RawMessage) string {
	var w, g llm.Request
	if json.Unmarshal(want, &w) != nil || json.Unmarshal(got, &g) != nil {
		return "the requests differ"
	}
	for i := range max(len(w.Messages), len(g.Messages)) {
		if i >= len(w.Messages) {
			return fmt.Sprintf("the replay sends %d messages, the recording %d; message %d (%s) is new",
				len(g.Messages), len(w.Messages), i+1, g.Messages[i].Role)
		}
		if i >= len(g.Messages) {
			return fmt.Sprintf("the replay sends %d messages, the recording %d", len(g.Messages), len(w.Messages))
		}
		wm, gm := w.Messages[i], g.Messages[i]
		if reflect.DeepEqual(wm, gm) {
			continue
		}
		if wm.Role != gm.Role {
			return fmt.Sprintf("message %d is from %s, recorded from %s", i+1, gm.Role, wm.Role)
		}
		wt, gt := messageText(wm), messageText(gm)
		at := commonPrefix(wt, gt)
		return fmt.Sprintf("message %d (%s) differs at character %d: recorded %q, replay %q",
			i+1, wm.Role, at+1, excerpt(wt, at), excerpt(gt, at))
	}
	if !slices.Equal(w.Tools, g.Tools) {
		return fmt.Sprintf("the tools offered differ: recorded %v, replay %v", w.Tools, g.Tools)
	}
	return "the requests differ"
}

func messageText(m llm.RequestMessage) string {
	var b strings.Builder
	for _, p := range m.Parts {
		switch p.Type {
		case "text":
			b.WriteString(p.Text)
		case "tool_call":
			fmt.Fprintf(&b, "[tool call %s %s: %s]", p.ID, p.Name, p.Content)
		case "tool_result":
			fmt.Fprintf(&b, "[tool result %s %s: %s]", p.ID, p.Name, p.Content)
		default:
			fmt.Fprintf(&b, "[%s]", p.Type)
		}
	}
	return b.String()
}

func commonPrefix(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	i := 0
	for i < len(ra) && i < len(rb) && ra[i] == rb[i] {
		i++
	}
	return i
}

// excerpt returns the text around rune at.
func excerpt(s string, at int) string {
	r := []rune(s)
	from, to := max(0, at-30), min(len(r), at+50)
	out := string(r[from:to])
	if from > 0 {
		out = "…" + out
	}
	if to < len(r) {
		out += "…"
	}
	return out
}
