package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sort"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
)

// ErrDiverged is what a *DivergenceError is (errors.Is): a replayed model
// call asked something the recording has no answer for.
var ErrDiverged = errors.New("trace: replay diverged from the recording")

// DivergenceError is the error a Cassette returns for a model call it
// cannot answer: the request differs from the recorded one, or the
// recording has no call there.
type DivergenceError struct {
	Divergence Divergence
}

func (e *DivergenceError) Error() string {
	return "trace: replay diverged from the recording: " + e.Divergence.String()
}

// Is reports whether target is ErrDiverged.
func (e *DivergenceError) Is(target error) bool { return target == ErrDiverged }

// RecordedError is returned by a Cassette for a call that failed when it
// was recorded: the replay fails it the same way.
type RecordedError struct {
	Path string
	Call int
	Msg  string
}

func (e *RecordedError) Error() string {
	return fmt.Sprintf("trace: recorded model call %d of %s failed: %s", e.Call, e.Path, e.Msg)
}

// UnreadableError is a recorded model call whose request or response a
// replay could not read from the store (OpenCassette) when it asked for
// them: the model call fails with it, and Replay returns it.
type UnreadableError struct {
	Run  string
	Path string
	Call int   // the call's position among its path's calls, from 1
	Seq  int64 // the call's event
	Err  error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("trace: replay of run %q: recorded model call %d of %s (event %d) cannot be read: %v",
		e.Run, e.Call, e.Path, e.Seq, e.Err)
}

// Unwrap returns why the call could not be read.
func (e *UnreadableError) Unwrap() error { return e.Err }

// Recording is a recorded run with its events, model calls with their
// requests and responses, all in memory: what NewCassette plays. A
// recording in a Store is played from there by OpenCassette, a page at a
// time.
type Recording struct {
	Run    RunInfo
	Events []Event
}

// Load reads run id from s, with every event and the bodies of its model
// calls, page by page (AllEvents) into one Recording. The Recording holds
// the whole run in memory, bodies and all: a replay reads a stored run
// with OpenCassette instead, which holds the model calls' metadata and
// reads a call's bodies when it answers it.
func Load(ctx context.Context, s Store, id string) (*Recording, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	rec := &Recording{Run: run}
	for e, err := range AllEvents(ctx, s, id, EventQuery{Bodies: true}) {
		if err != nil {
			return nil, err
		}
		rec.Events = append(rec.Events, e)
	}
	return rec, nil
}

// Cassette is an llms.Model that answers each model call of a replay with
// the response recorded for the same event path (graph.PathOf: the agent's
// scope) at the same position among that path's calls, provided the
// request is the same (its hash, as llm.Observe computes it). Concurrent
// calls on one path may come in another order: a call is answered by the
// first unused recorded call of its path with the same request. A call
// whose request differs, or that the recording lacks, fails with a
// *DivergenceError, and the Cassette keeps the Divergence.
//
// A Cassette plays a Recording in memory (NewCassette) or a run in a
// Store (OpenCassette): then it holds each recorded call's place, request
// hash and error, and reads a call's request and response from the store
// when it answers it (or reports a divergence from it), so that a replay
// holds the bodies of the calls in flight, not the run's.
//
// Calls that llm.Observe answered from the journal when recording
// (ModelCall.Replayed) are not on the cassette: they did not reach a
// model. A Cassette is safe for concurrent use.
type Cassette struct {
	rec *Recording // its Events are empty when store is set
	// store holds the recording (OpenCassette), nil for NewCassette.
	store Store

	mu          sync.Mutex
	byPath      map[string][]*cassetteCall
	next        map[string]int
	divergences []Divergence
	answered    int
	failed      error // the first recorded call that could not be read
}

// cassetteCall is one recorded model call, without its bodies.
type cassetteCall struct {
	seq   int64
	call  int // position among its path's calls, from 1
	path  string
	agent string
	hash  string
	err   string
	at    int // index in the Recording's Events (NewCassette); -1: in the store
	used  bool
}

var _ llms.Model = (*Cassette)(nil)

// NewCassette returns a Cassette playing rec's model calls. The recording
// must hold their requests and responses (Load reads them).
func NewCassette(rec *Recording) (*Cassette, error) {
	c := newCassette(rec, nil)
	for i, e := range rec.Events {
		if e.Kind != llm.EventModelCall {
			continue
		}
		if err := c.add(e, i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// OpenCassette returns a Cassette playing the model calls of run id of s.
// It reads their metadata (path, request hash, error) a page at a time,
// without bodies; a call's request and response are read from s when the
// call is answered, and a call whose response cannot be read then fails
// with an *UnreadableError, which names the run, the path and the call
// (Replay returns it).
func OpenCassette(ctx context.Context, s Store, id string) (*Cassette, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	c := newCassette(&Recording{Run: run}, s)
	for e, err := range AllEvents(ctx, s, id, EventQuery{Kinds: []string{llm.EventModelCall}}) {
		if err != nil {
			return nil, fmt.Errorf("trace: cassette of run %q: %w", id, err)
		}
		if err := c.add(e, -1); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func newCassette(rec *Recording, s Store) *Cassette {
	return &Cassette{rec: rec, store: s, byPath: map[string][]*cassetteCall{}, next: map[string]int{}}
}

// add puts model call e on the cassette; at is its index in the
// Recording's Events, or -1 when its bodies are in the store.
func (c *Cassette) add(e Event, at int) error {
	var mc llm.ModelCall
	if err := json.Unmarshal(e.Payload, &mc); err != nil {
		return fmt.Errorf("trace: cassette of run %q: model call %d: %w", c.rec.Run.ID, e.Seq, err)
	}
	if mc.Replayed {
		return nil
	}
	if e.Hash == "" || (at >= 0 && mc.Err == "" && len(e.Response) == 0) {
		return fmt.Errorf("trace: cassette of run %q: model call %d (%s) has no recorded request or response: load the run with its bodies (trace.Load) or open it in its store (trace.OpenCassette)",
			c.rec.Run.ID, e.Seq, e.Path)
	}
	calls := c.byPath[e.Path]
	path := e.Path
	if len(calls) > 0 {
		path = calls[0].path // one copy of a path for all its calls
	}
	c.byPath[path] = append(calls, &cassetteCall{
		seq: e.Seq, call: len(calls) + 1, path: path, agent: e.Agent, hash: e.Hash, err: mc.Err, at: at,
	})
	return nil
}

// Run returns the recorded run the Cassette plays.
func (c *Cassette) Run() RunInfo { return c.rec.Run }

// Events yields the recorded events of the run that q selects, by Seq:
// from the store a page at a time (q's Limit and MaxBytes bound a page,
// as for AllEvents) for a Cassette of OpenCassette, from the Recording
// for one of NewCassette. It stops at the first error, which it yields.
func (c *Cassette) Events(ctx context.Context, q EventQuery) iter.Seq2[Event, error] {
	if c.store != nil {
		return AllEvents(ctx, c.store, c.rec.Run.ID, q)
	}
	return func(yield func(Event, error) bool) {
		for _, e := range c.rec.Events {
			if !q.Match(e) {
				continue
			}
			if !q.Bodies {
				e.Request, e.Response = nil, nil
			}
			if !yield(e, nil) {
				return
			}
		}
	}
}

// bodies returns the event of recorded call x with its request and
// response: from the Recording, or read from the store.
func (c *Cassette) bodies(ctx context.Context, x *cassetteCall) (Event, error) {
	if x.at >= 0 {
		return c.rec.Events[x.at], nil
	}
	evs, err := c.store.Events(ctx, c.rec.Run.ID, EventQuery{After: x.seq - 1, Until: x.seq, Limit: 1, Bodies: true})
	if err == nil && (len(evs) == 0 || evs[0].Seq != x.seq) {
		err = errors.New("the store no longer holds it")
	}
	if err != nil {
		return Event{}, c.unreadable(x, err)
	}
	return evs[0], nil
}

// unreadable is the error of recorded call x whose bodies cannot be read.
func (c *Cassette) unreadable(x *cassetteCall, err error) error {
	return &UnreadableError{Run: c.rec.Run.ID, Path: x.path, Call: x.call, Seq: x.seq, Err: err}
}

// response decodes the recorded response of call x.
func (c *Cassette) response(ctx context.Context, x *cassetteCall) (*llms.ContentResponse, error) {
	e, err := c.bodies(ctx, x)
	if err != nil {
		return nil, err
	}
	if len(e.Response) == 0 {
		return nil, c.unreadable(x, errors.New("the store holds no response of it"))
	}
	resp, err := llm.DecodeResponse(e.Response)
	if err != nil {
		return nil, fmt.Errorf("trace: recorded model call %d of %s: %w", x.call, x.path, err)
	}
	return resp, nil
}

// fail keeps err, a recorded call that could not be read, for Replay.
func (c *Cassette) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed == nil {
		c.failed = err
	}
}

// failure returns the first recorded call that could not be read since
// the last Rewind, if any.
func (c *Cassette) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// Models returns model tiers that are all served by the Cassette, each
// with the profile like gives it (nil: zero profiles). Give the profiles
// of the recorded run's models: context windows are built from them, and
// a different budget makes different requests.
func (c *Cassette) Models(like interface{ Profile(llm.Tier) llm.Profile }) (*llm.Models, error) {
	tiers := map[llm.Tier]llm.TierModel{}
	for _, t := range llm.Tiers() {
		tm := llm.TierModel{Model: c}
		if like != nil {
			tm.Profile = like.Profile(t)
		}
		tiers[t] = tm
	}
	return llm.NewStatic(tiers)
}

// Rewind makes every recorded call available again and forgets the
// divergences, for another replay.
func (c *Cassette) Rewind() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, calls := range c.byPath {
		for _, x := range calls {
			x.used = false
		}
	}
	clear(c.next)
	c.divergences, c.answered, c.failed = nil, 0, nil
}

// Divergences returns the calls the Cassette could not answer, in the
// order they came.
func (c *Cassette) Divergences() []Divergence {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Divergence(nil), c.divergences...)
}

// Answered returns how many calls the Cassette answered.
func (c *Cassette) Answered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answered
}

// recorded returns the number of recorded calls.
func (c *Cassette) recorded() int {
	n := 0
	for _, calls := range c.byPath {
		n += len(calls)
	}
	return n
}

// unused returns the recorded calls not asked for, by Seq.
func (c *Cassette) unused() []*cassetteCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*cassetteCall
	for _, calls := range c.byPath {
		for _, x := range calls {
			if !x.used {
				out = append(out, x)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// Call answers a single prompt.
func (c *Cassette) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, c, prompt, opts...)
}

// GenerateContent answers with the recorded response to the same request
// on the same path, or fails with a *DivergenceError.
func (c *Cassette) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var co llms.CallOptions
	for _, opt := range opts {
		opt(&co)
	}
	req, hash := llm.EncodeRequest(msgs, co)
	path := graph.PathOf(ctx)
	hit, err := c.take(ctx, path, hash, req)
	if err != nil {
		return nil, err
	}
	if hit.err != "" {
		c.answer()
		return nil, &RecordedError{Path: path, Call: hit.call, Msg: hit.err}
	}
	resp, err := c.response(ctx, hit)
	if err != nil {
		if ctx.Err() == nil { // not the caller giving up: the recording fails
			c.fail(err)
		}
		return nil, err
	}
	c.answer()
	if co.StreamingFunc != nil && resp.Choices[0].Content != "" {
		if err := co.StreamingFunc(ctx, []byte(resp.Choices[0].Content)); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// answer counts a call answered from the recording.
func (c *Cassette) answer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answered++
}

// take finds the recorded call that answers a request, or records the
// divergence. It holds mu while it reads the request of the recorded call
// that a divergence is from, so that divergences stay in the order they
// came.
func (c *Cassette) take(ctx context.Context, path, hash string, req json.RawMessage) (*cassetteCall, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.next[path]
	c.next[path] = n + 1
	calls := c.byPath[path]
	var hit, want *cassetteCall
	if n < len(calls) && !calls[n].used && calls[n].hash == hash {
		hit = calls[n]
	}
	for _, x := range calls {
		if hit != nil {
			break
		}
		if x.used {
			continue
		}
		if want == nil {
			want = x
		}
		if x.hash == hash {
			hit = x
		}
	}
	if hit != nil {
		hit.used = true
		return hit, nil
	}
	d := Divergence{Kind: DivergedUnrecorded, Path: path, Agent: llm.AgentFrom(ctx), Call: n + 1, Got: hash,
		Detail: fmt.Sprintf("the recording has %d model calls on this path, all used", len(calls))}
	if len(calls) == 0 {
		d.Detail = "the recording has no model call on this path"
	}
	if want != nil {
		d.Kind, d.Seq, d.Want, d.Call = DivergedRequest, want.seq, want.hash, want.call
		d.Detail = c.diffRecorded(ctx, want, req)
	}
	c.divergences = append(c.divergences, d)
	return nil, &DivergenceError{Divergence: d}
}

// diffRecorded says where req differs from the request of recorded call
// want.
func (c *Cassette) diffRecorded(ctx context.Context, want *cassetteCall, req json.RawMessage) string {
	e, err := c.bodies(ctx, want)
	if err != nil {
		return "the requests differ; " + err.Error()
	}
	return diffRequests(e.Request, req)
}
