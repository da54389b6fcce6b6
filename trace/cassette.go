package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Recording is a recorded run with its events, model calls with their
// requests and responses.
type Recording struct {
	Run    RunInfo
	Events []Event
}

// Load reads run id from s, with every event and the bodies of its model
// calls.
func Load(ctx context.Context, s Store, id string) (*Recording, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	events, err := s.Events(ctx, id, EventQuery{Bodies: true})
	if err != nil {
		return nil, err
	}
	return &Recording{Run: run, Events: events}, nil
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
// Calls that llm.Observe answered from the journal when recording
// (ModelCall.Replayed) are not on the cassette: they did not reach a
// model. A Cassette is safe for concurrent use.
type Cassette struct {
	rec *Recording

	mu          sync.Mutex
	byPath      map[string][]*cassetteCall
	next        map[string]int
	divergences []Divergence
	answered    int
}

// cassetteCall is one recorded model call.
type cassetteCall struct {
	seq      int64
	call     int // position among its path's calls, from 1
	path     string
	agent    string
	hash     string
	request  json.RawMessage
	response json.RawMessage
	err      string
	used     bool
}

var _ llms.Model = (*Cassette)(nil)

// NewCassette returns a Cassette playing rec's model calls. The recording
// must hold their requests and responses (Load reads them).
func NewCassette(rec *Recording) (*Cassette, error) {
	c := &Cassette{rec: rec, byPath: map[string][]*cassetteCall{}, next: map[string]int{}}
	for _, e := range rec.Events {
		if e.Kind != llm.EventModelCall {
			continue
		}
		var mc llm.ModelCall
		if err := json.Unmarshal(e.Payload, &mc); err != nil {
			return nil, fmt.Errorf("trace: cassette of run %q: model call %d: %w", rec.Run.ID, e.Seq, err)
		}
		if mc.Replayed {
			continue
		}
		if e.Hash == "" || (mc.Err == "" && len(e.Response) == 0) {
			return nil, fmt.Errorf("trace: cassette of run %q: model call %d (%s) has no recorded request or response: load the run with its bodies (trace.Load)",
				rec.Run.ID, e.Seq, e.Path)
		}
		calls := c.byPath[e.Path]
		c.byPath[e.Path] = append(calls, &cassetteCall{
			seq: e.Seq, call: len(calls) + 1, path: e.Path, agent: e.Agent, hash: e.Hash,
			request: e.Request, response: e.Response, err: mc.Err,
		})
	}
	return c, nil
}

// Recording returns the recording the Cassette plays.
func (c *Cassette) Recording() *Recording { return c.rec }

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
	c.divergences, c.answered = nil, 0
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
		return nil, &RecordedError{Path: path, Call: hit.call, Msg: hit.err}
	}
	resp, err := llm.DecodeResponse(hit.response)
	if err != nil {
		return nil, fmt.Errorf("trace: recorded model call %d of %s: %w", hit.call, path, err)
	}
	if co.StreamingFunc != nil && resp.Choices[0].Content != "" {
		if err := co.StreamingFunc(ctx, []byte(resp.Choices[0].Content)); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// take finds the recorded call that answers a request, or records the
// divergence.
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
		c.answered++
		return hit, nil
	}
	d := Divergence{Kind: DivergedUnrecorded, Path: path, Agent: llm.AgentFrom(ctx), Call: n + 1, Got: hash,
		Detail: fmt.Sprintf("the recording has %d model calls on this path, all used", len(calls))}
	if len(calls) == 0 {
		d.Detail = "the recording has no model call on this path"
	}
	if want != nil {
		d.Kind, d.Seq, d.Want, d.Call = DivergedRequest, want.seq, want.hash, want.call
		d.Detail = diffRequests(want.request, req)
	}
	c.divergences = append(c.divergences, d)
	return nil, &DivergenceError{Divergence: d}
}
