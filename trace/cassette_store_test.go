package trace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/memory"
)

// meteredStore is a trace.Store whose pages hold page events at most (0:
// as many as the store gives), that counts what each Events call returns,
// hands out bodies it can tell are still held (track: it samples them
// after each read with bodies), and fails the reads that fail selects.
type meteredStore struct {
	trace.Store
	page  int
	track bool
	fail  func(q trace.EventQuery) error

	mu     sync.Mutex
	reads  []read
	bodies []heldBody
	peak   int64
}

// read is one Events call: what it asked and what it returned.
type read struct {
	q      trace.EventQuery
	events int
	bytes  int64 // Event.Size of the events
	bodies int64 // bytes of their requests and responses
}

type heldBody struct {
	p    weak.Pointer[byte]
	size int64
}

func (s *meteredStore) Events(ctx context.Context, id string, q trace.EventQuery) ([]trace.Event, error) {
	if s.fail != nil {
		if err := s.fail(q); err != nil {
			return nil, err
		}
	}
	if s.page > 0 && (q.Limit <= 0 || q.Limit > s.page) {
		q.Limit = s.page
	}
	evs, err := s.Store.Events(ctx, id, q)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := read{q: q, events: len(evs)}
	for i := range evs {
		r.bytes += evs[i].Size()
		r.bodies += int64(len(evs[i].Request) + len(evs[i].Response))
		if s.track {
			evs[i].Request, evs[i].Response = s.hand(evs[i].Request), s.hand(evs[i].Response)
		}
	}
	s.reads = append(s.reads, r)
	if s.track && q.Bodies {
		s.sampleLocked()
	}
	return evs, nil
}

// hand returns a copy of body that s can tell is held or not.
func (s *meteredStore) hand(body json.RawMessage) json.RawMessage {
	if len(body) == 0 {
		return body
	}
	c := make(json.RawMessage, len(body))
	copy(c, body)
	s.bodies = append(s.bodies, heldBody{p: weak.Make(&c[0]), size: int64(len(c))})
	return c
}

// sample notes the bytes of the bodies handed out that are still held
// (reachable after a collection), and returns them.
func (s *meteredStore) sample() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sampleLocked()
}

func (s *meteredStore) sampleLocked() int64 {
	runtime.GC()
	var held int64
	for _, b := range s.bodies {
		if b.p.Value() != nil {
			held += b.size
		}
	}
	s.peak = max(s.peak, held)
	return held
}

// bytesRead is the bytes of the events the Events calls returned.
func (s *meteredStore) bytesRead() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, r := range s.reads {
		n += r.bytes
	}
	return n
}

// cassettes are the two ways to play a stored run: loaded into memory, or
// from the store.
var cassettes = []struct {
	name string
	open func(ctx context.Context, s trace.Store, id string) (*trace.Cassette, error)
}{
	{"Load and NewCassette", func(ctx context.Context, s trace.Store, id string) (*trace.Cassette, error) {
		rec, err := trace.Load(ctx, s, id)
		if err != nil {
			return nil, err
		}
		return trace.NewCassette(rec)
	}},
	{"OpenCassette", trace.OpenCassette},
}

// TestReplayReadsTheRecordingPageByPage: from a store whose pages hold
// one event, a recorded run replays as it does from one page, and its
// divergences are the same: every model call, tool result and request is
// read.
func TestReplayReadsTheRecordingPageByPage(t *testing.T) {
	for _, cas := range cassettes {
		t.Run(cas.name, func(t *testing.T) {
			store, err := record(t, calc{}.build(t, script()), "run-1", "What is 2 + 3?", trace.RecorderConfig{})
			require.NoError(t, err)
			paged := &meteredStore{Store: store, page: 1}
			c, err := cas.open(t.Context(), paged, "run-1")
			require.NoError(t, err)

			rep, err := trace.Replay(t.Context(), calc{}.build(t, c), c)
			require.NoError(t, err)
			assert.True(t, rep.OK(), "%s", rep)
			assert.Equal(t, 2, rep.RecordedCalls)
			assert.Equal(t, 2, rep.ReplayedCalls)

			rep, err = trace.Replay(t.Context(), calc{offset: 1}.build(t, c), c)
			require.NoError(t, err)
			require.False(t, rep.OK())
			assert.Equal(t, trace.DivergedRequest, rep.Divergences[0].Kind)
			assert.Equal(t, 2, rep.Divergences[0].Call)
			assert.Contains(t, rep.Divergences[0].Detail, "message 4 (tool) differs", "the recorded request is read for the detail")
			var tool []trace.Divergence
			for _, d := range rep.Divergences {
				if d.Kind == trace.DivergedToolResult {
					tool = append(tool, d)
				}
			}
			require.Len(t, tool, 1, "%s", rep)
			assert.Equal(t, "ok: 5", tool[0].Want)
			assert.Equal(t, "ok: 6", tool[0].Got)

			for _, r := range paged.reads {
				assert.LessOrEqual(t, r.events, 1, "a page of one event")
			}
		})
	}
}

// talker is a workflow whose node talk makes calls model calls one after
// the other, each asking "call i"; sample, if set, is called after each.
func talker(t testing.TB, model llms.Model, calls int, sample func()) *graph.Runnable {
	t.Helper()
	said := graph.NewKey[int]("said")
	m := llm.Observe(model, llm.ModelInfo{Tier: "basic", Model: "scripted"})
	g := graph.New("talker", said)
	g.AddNode("talk", func(ctx context.Context, s graph.State) (graph.Command, error) {
		n := 0
		for i := range calls {
			resp, err := m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprint("call ", i+1))})
			if err != nil {
				return graph.Command{}, err
			}
			n += len(resp.Choices[0].Content)
			if sample != nil {
				sample()
			}
		}
		return graph.Update(said.Set(n)), nil
	})
	g.AddEdge(graph.Start, "talk")
	g.AddEdge("talk", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// recordTalk records talker making calls calls, each answered with size
// bytes, as run id of a new store.
func recordTalk(t testing.TB, id string, calls, size int) trace.Store {
	t.Helper()
	reply := &scripted.Reply{Text: strings.Repeat("x", size)}
	wf := talker(t, scripted.New(scripted.Script{Default: reply}), calls, nil)
	store := memory.New()
	rec := trace.NewRecorder(store, trace.RecorderConfig{})
	in, err := trace.EncodeInput(graph.Input())
	require.NoError(t, err)
	for _, err := range rec.Record(context.Background(), trace.RunInfo{ID: id, Graph: wf.Name(), Input: in, Start: trace.StartInput},
		wf.Stream(context.Background(), graph.Input())) {
		require.NoError(t, err)
	}
	require.NoError(t, rec.Close(context.Background()))
	return store
}

// TestAReplayFromTheStoreHoldsTheBodiesOfACallInFlight: a run of 20 model
// calls of 1 MiB each replays from its store reading each call's bodies
// once, when it answers the call (one event a read), and never holding
// the bodies of more than two calls (sampled when a call's bodies are
// read and after each call); loaded into memory, it holds all of them
// (what the meter measures).
func TestAReplayFromTheStoreHoldsTheBodiesOfACallInFlight(t *testing.T) {
	const calls, size = 20, 1 << 20
	store := recordTalk(t, "run-big", calls, size)
	for _, cas := range cassettes {
		t.Run(cas.name, func(t *testing.T) {
			metered := &meteredStore{Store: store, track: true}
			c, err := cas.open(t.Context(), metered, "run-big")
			require.NoError(t, err)
			rep, err := trace.Replay(t.Context(), talker(t, c, calls, func() { metered.sample() }), c)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%s", rep)
			require.Equal(t, calls, rep.ReplayedCalls)
			t.Logf("%s: %d reads, %d bytes read, at most %d bytes of bodies held", cas.name, len(metered.reads), metered.bytesRead(), metered.peak)

			if cas.name != "OpenCassette" {
				assert.GreaterOrEqual(t, metered.peak, int64(calls*size), "the recording in memory holds every body")
				return
			}
			assert.GreaterOrEqual(t, metered.peak, int64(size), "the meter sees the bodies of the call in flight")
			assert.LessOrEqual(t, metered.peak, int64(2*size), "the bodies of two calls at most")
			var bodyReads int
			var bodyBytes int64
			for _, r := range metered.reads {
				if !r.q.Bodies {
					assert.Zero(t, r.bodies, "a read without bodies")
					assert.LessOrEqual(t, r.bytes, r.q.EffectiveMaxBytes(), "a page")
					continue
				}
				bodyReads++
				bodyBytes += r.bodies
				assert.Equal(t, 1, r.events, "a call's bodies are read alone")
				assert.Equal(t, r.q.After+1, r.q.Until, "one event")
			}
			assert.Equal(t, calls, bodyReads, "each call's bodies are read once")
			assert.GreaterOrEqual(t, bodyBytes, int64(calls*size))
			assert.Less(t, bodyBytes, int64(calls*size)+int64(calls)<<10, "and no other's")
		})
	}
}

// TestAReplayFailsOnABodyItCannotRead: a recorded call whose bodies the
// store cannot give when the replay asks for them fails the model call
// with an *UnreadableError naming the run, the path and the call, and
// Replay returns it.
func TestAReplayFailsOnABodyItCannotRead(t *testing.T) {
	errDisk := errors.New("disk on fire")
	store, err := record(t, calc{}.build(t, script()), "run-1", "What is 2 + 3?", trace.RecorderConfig{})
	require.NoError(t, err)
	second := events(t, store, "run-1", llm.EventModelCall, false)[1].Seq
	tests := []struct {
		name  string
		fail  func(q trace.EventQuery) error
		page  func(s trace.Store) trace.Store
		cause string
	}{
		{name: "the store fails", cause: "disk on fire", fail: func(q trace.EventQuery) error {
			if q.Bodies && q.Until == second {
				return errDisk
			}
			return nil
		}},
		{name: "the event is gone", cause: "the store no longer holds it", page: func(s trace.Store) trace.Store {
			return dropping{Store: s, seq: second}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s trace.Store = store
			if tt.page != nil {
				s = tt.page(s)
			}
			c, err := trace.OpenCassette(t.Context(), &meteredStore{Store: s, fail: tt.fail}, "run-1")
			require.NoError(t, err)
			rep, err := trace.Replay(t.Context(), calc{}.build(t, c), c)
			want := fmt.Sprintf(`trace: replay of run "run-1": recorded model call 2 of %s (event %d) cannot be read: %s`, agentPath, second, tt.cause)
			require.EqualError(t, err, want)
			var ue *trace.UnreadableError
			require.ErrorAs(t, err, &ue)
			assert.Equal(t, trace.UnreadableError{Run: "run-1", Path: agentPath, Call: 2, Seq: second, Err: ue.Err}, *ue)
			if tt.fail != nil {
				assert.ErrorIs(t, err, errDisk)
			}
			assert.Equal(t, trace.StatusError, rep.Status, "the model call failed the run")
			assert.Contains(t, rep.Error, want)
			assert.Equal(t, 1, rep.ReplayedCalls)
		})
	}
}

// TestAReplayWhoseCallGaveUpReportsIt: a model call whose context ends
// while its recorded response is read fails as its context says, and the
// replay reports how the run ended otherwise: the recording is not at
// fault.
func TestAReplayWhoseCallGaveUpReportsIt(t *testing.T) {
	store := recordTalk(t, "run-1", 2, 10)
	var giveUp context.CancelFunc
	s := &meteredStore{Store: store, fail: func(q trace.EventQuery) error {
		if q.Bodies {
			giveUp() // the call's own context ends, not the replay's
			return context.Canceled
		}
		return nil
	}}
	c, err := trace.OpenCassette(t.Context(), s, "run-1")
	require.NoError(t, err)
	model := llm.Observe(c, llm.ModelInfo{Tier: "basic", Model: "scripted"})
	said := graph.NewKey[int]("said")
	g := graph.New("talker", said)
	g.AddNode("talk", func(ctx context.Context, _ graph.State) (graph.Command, error) {
		ctx, giveUp = context.WithCancel(ctx)
		defer giveUp()
		_, err := model.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "call 1")})
		return graph.Update(), err
	})
	g.AddEdge(graph.Start, "talk")
	g.AddEdge("talk", graph.End)
	wf, err := g.Compile()
	require.NoError(t, err)

	rep, err := trace.Replay(t.Context(), wf, c)
	require.NoError(t, err, "a divergence, not an unreadable recording")
	assert.Equal(t, trace.StatusError, rep.Status)
	assert.Contains(t, rep.Error, "context canceled")
	require.NotEmpty(t, rep.Divergences)
	assert.Equal(t, trace.DivergedStatus, rep.Divergences[len(rep.Divergences)-1].Kind, "%s", rep)
}

// dropping is a store that no longer gives the event seq with its bodies.
type dropping struct {
	trace.Store
	seq int64
}

func (d dropping) Events(ctx context.Context, id string, q trace.EventQuery) ([]trace.Event, error) {
	if q.Bodies && q.After < d.seq && (q.Until == 0 || q.Until >= d.seq) {
		return nil, nil
	}
	return d.Store.Events(ctx, id, q)
}

// BenchmarkReplay replays a run of calls model calls of 64 KiB each,
// loaded into memory or from its store: bytes-read/op is what the store
// gave.
func BenchmarkReplay(b *testing.B) {
	const size = 64 << 10
	for _, calls := range []int{10, 100} {
		store := recordTalk(b, "run-bench", calls, size)
		for _, cas := range cassettes {
			b.Run(fmt.Sprintf("calls=%d/%s", calls, strings.ReplaceAll(cas.name, " ", "")), func(b *testing.B) {
				metered := &meteredStore{Store: store}
				b.ReportAllocs()
				for b.Loop() {
					c, err := cas.open(context.Background(), metered, "run-bench")
					if err != nil {
						b.Fatal(err)
					}
					rep, err := trace.Replay(context.Background(), talker(b, c, calls, nil), c)
					if err != nil || !rep.OK() {
						b.Fatal(err, rep)
					}
				}
				b.ReportMetric(float64(metered.bytesRead())/float64(b.N), "bytes-read/op")
			})
		}
	}
}
