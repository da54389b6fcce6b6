package trace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/memory"
)

// viewPage is the page the views read (trace's viewPageBytes).
const viewPage = 1 << 20

// pageStore is a Store that records, for each Events call, the events and
// bytes (Event.Size) it returned. With maxBytes set, it ends a page at
// that many bytes whatever the caller asked (a store may return less);
// with each set, it calls each before every Events call.
type pageStore struct {
	trace.Store
	maxBytes int64
	each     func()

	mu    sync.Mutex
	pages []page
}

type page struct {
	q      trace.EventQuery
	events int
	bytes  int64
}

func (s *pageStore) Events(ctx context.Context, id string, q trace.EventQuery) ([]trace.Event, error) {
	if s.each != nil {
		s.each()
	}
	if s.maxBytes > 0 {
		q.MaxBytes = min(q.EffectiveMaxBytes(), s.maxBytes)
	}
	evs, err := s.Store.Events(ctx, id, q)
	var n int64
	for _, e := range evs {
		n += e.Size()
	}
	s.mu.Lock()
	s.pages = append(s.pages, page{q: q, events: len(evs), bytes: n})
	s.mu.Unlock()
	return evs, err
}

// read returns the pages read so far and forgets them.
func (s *pageStore) read() []page {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pages
	s.pages = nil
	return p
}

// allEvents returns every event of run id, with bodies.
func allEvents(t testing.TB, s trace.Store, id string) []trace.Event {
	t.Helper()
	var out []trace.Event
	for e, err := range trace.AllEvents(context.Background(), s, id, trace.EventQuery{Bodies: true}) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// bigRun describes a synthetic recorded run "big" of graph g: one node n
// whose agents each make calls rounds of a snapshot, a model call (its
// response holds text bytes of content, its request as many), a tool call
// and a tool result (text bytes of output), and end with an output.
type bigRun struct {
	agents, calls, text int
}

// store records the run in a new memory store and returns it.
func (b bigRun) store(t testing.TB) (trace.Store, trace.RunInfo) {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	var evs []trace.Event
	add := func(kind, path string, payload any) *trace.Event {
		e := trace.Event{RunID: "big", Seq: int64(len(evs) + 1), Kind: kind, Path: path, Time: at.Add(time.Duration(len(evs)) * time.Millisecond)}
		if payload != nil {
			raw, err := json.Marshal(payload)
			require.NoError(t, err)
			e.Payload = raw
		}
		evs = append(evs, e)
		return &evs[len(evs)-1]
	}
	text := func(agent, what string, i int) string {
		s := fmt.Sprintf("%s %s %d: ", agent, what, i)
		return s + strings.Repeat("é", (b.text-len(s))/2)
	}
	add(graph.EventRunStart.String(), "g", nil)
	add(graph.EventStepStart.String(), "g", nil)
	add(graph.EventNodeStart.String(), "g/n", nil)
	for k := range b.agents {
		name := fmt.Sprintf("a%d", k)
		path := "g/n/agent:" + name
		add(agentevent.EventStart, path, agentevent.Info{Agent: name, Task: "task of " + name, Tier: "basic", Tools: []string{"echo"}}).Agent = name
		for i := range b.calls {
			add(agentevent.EventSnapshot, path, map[string]any{"agent": name, "total_tokens": 100 + i, "messages": 2 + i,
				"parts": []map[string]any{{"name": "system", "tokens": 10, "included": true}, {"name": "history", "tokens": 90 + i, "included": true}}})
			mc := add(llm.EventModelCall, path, llm.ModelCall{Agent: name, Model: "m", Tier: "basic", PromptTokens: 100, CompletionTokens: 10, Duration: time.Second})
			mc.Hash = fmt.Sprintf("%016x", mc.Seq)
			id := fmt.Sprintf("call_%s_%d", name, i)
			resp, err := json.Marshal([]map[string]any{{"content": text(name, "answer", i), "reasoning": "because " + id,
				"tool_calls": []map[string]any{{"id": id, "name": "echo", "arguments": `{"i":` + fmt.Sprint(i) + `}`}}}})
			require.NoError(t, err)
			mc.Response = resp
			mc.Request, err = json.Marshal(text(name, "request", i))
			require.NoError(t, err)
			add(tools.EventToolCall, path+"/tool:"+id, tools.CallEvent{Agent: name, ID: id, Name: "echo", Args: json.RawMessage(`{"i":` + fmt.Sprint(i) + `}`)})
			add(tools.EventToolResult, path+"/tool:"+id, tools.ResultEvent{Agent: name, ID: id, Name: "echo", Status: "ok", Output: text(name, "output", i), Duration: time.Millisecond})
		}
		add(agentevent.EventEnd, path, agentevent.Info{Agent: name, Output: "output of " + name})
	}
	add(graph.EventNodeEnd.String(), "g/n", nil)
	s := memory.New()
	run := trace.RunInfo{ID: "big", Graph: "g", Workflow: "big", Status: trace.StatusRunning, Start: trace.StartInput, StartedAt: at}
	require.NoError(t, s.CreateRun(ctx, run))
	for batch := range slicesChunk(evs, 500) {
		require.NoError(t, s.AppendEvents(ctx, batch))
	}
	ended := at.Add(time.Hour)
	run.Status, run.EndedAt, run.Events = trace.StatusDone, &ended, int64(len(evs))
	require.NoError(t, s.FinishRun(ctx, run))
	run, err := s.Run(ctx, "big")
	require.NoError(t, err)
	return s, run
}

func slicesChunk(evs []trace.Event, n int) func(func([]trace.Event) bool) {
	return func(yield func([]trace.Event) bool) {
		for i := 0; i < len(evs); i += n {
			if !yield(evs[i:min(i+n, len(evs))]) {
				return
			}
		}
	}
}

// wantTimeline is the Timeline built from all events of run at once.
func wantTimeline(t testing.TB, s trace.Store, run trace.RunInfo) trace.Timeline {
	tl := trace.BuildTimeline(run, allEvents(t, s, run.ID))
	tl.LastSeq = max(tl.LastSeq, run.Events)
	return tl
}

// A run longer than a page gives the same views as all its events read at
// once: the views read every page.
func TestViewsOfARunLongerThanAPage(t *testing.T) {
	recorded, err := record(t, calc{}.build(t, script()), "run-1", "What is 2 + 3?", trace.RecorderConfig{})
	require.NoError(t, err)
	run, err := recorded.Run(t.Context(), "run-1")
	require.NoError(t, err)
	// A page of one event: every event is a page.
	paged := &pageStore{Store: recorded, maxBytes: 1}
	tl, err := trace.LoadTimeline(t.Context(), paged, "run-1")
	require.NoError(t, err)
	assert.Equal(t, wantTimeline(t, recorded, run), tl)
	assert.Greater(t, len(paged.read()), 10, "a page per event")
	require.NotEmpty(t, tl.Steps)
	id := tl.Steps[0].Nodes[0].Agents[0].ID

	d, err := trace.LoadAgent(t.Context(), paged, "run-1", id)
	require.NoError(t, err)
	want, ok := trace.BuildAgent(run, allEvents(t, recorded, "run-1"), id)
	require.True(t, ok)
	assert.Equal(t, want, d)
	assert.Equal(t, "2 + 3 = 5", d.ModelCalls[1].Content, "the answer of the second model call, on a page of its own")

	// A run of 20 MiB, on pages of the views' own size.
	big, run := bigRun{agents: 4, calls: 40, text: 64 << 10}.store(t)
	tl, err = trace.LoadTimeline(t.Context(), big, "big")
	require.NoError(t, err)
	assert.Equal(t, wantTimeline(t, big, run), tl)
	agents := tl.Steps[0].Nodes[0].Agents
	require.Len(t, agents, 4)
	assert.Equal(t, 40, agents[3].ToolCalls, "the last agent's calls, pages after the first")
	assert.Equal(t, "output of a3", tl.Answer)
	d, err = trace.LoadAgent(t.Context(), big, "big", agents[3].ID)
	require.NoError(t, err)
	want, ok = trace.BuildAgent(run, allEvents(t, big, "big"), agents[3].ID)
	require.True(t, ok)
	assert.Equal(t, want, d)
	require.Len(t, d.ModelCalls, 40)
	assert.True(t, strings.HasPrefix(d.ModelCalls[39].Content, "a3 answer 39: "))
}

// The views read a run a page at a time: no Events call returns more
// than the views' page (1 MiB), or one larger event.
func TestViewsReadAPageAtATime(t *testing.T) {
	base, _ := bigRun{agents: 4, calls: 40, text: 64 << 10}.store(t)
	s := &pageStore{Store: base}
	var runBytes, bodyBytes int64
	for _, e := range allEvents(t, base, "big") {
		runBytes += e.Size()
		bodyBytes += int64(len(e.Request) + len(e.Response))
	}
	require.Greater(t, runBytes, int64(20<<20), "a run of 20 MiB")

	tl, err := trace.LoadTimeline(t.Context(), s, "big")
	require.NoError(t, err)
	assertPages(t, s.read(), runBytes-bodyBytes)
	a := tl.Steps[0].Nodes[0].Agents[2]

	_, err = trace.LoadAgent(t.Context(), s, "big", a.ID)
	require.NoError(t, err)
	pages := s.read()
	assertPages(t, pages, runBytes-bodyBytes)
	var bodies int
	for _, p := range pages {
		if p.q.Bodies {
			bodies++
			assert.Equal(t, a.Path, p.q.Path, "the agent's model calls only")
		}
	}
	assert.Greater(t, bodies, 2, "the agent's bodies (5 MiB) on several pages")
}

// assertPages checks that each page read holds at most viewPage bytes or
// one event, and that they read at least least bytes in all.
func assertPages(t *testing.T, pages []page, least int64) {
	t.Helper()
	var all int64
	for i, p := range pages {
		all += p.bytes
		if p.events > 1 {
			assert.LessOrEqual(t, p.bytes, int64(viewPage), "page %d: %d events", i, p.events)
		}
	}
	assert.GreaterOrEqual(t, all, least, "the pages hold the run's events")
	assert.Greater(t, len(pages), int(least/viewPage), "pages of 1 MiB at most")
}

// heapProbe measures, at each Events call of a store, the heap that is
// still reachable after a collection, above what it was when started.
type heapProbe struct {
	base, max uint64
}

func (h *heapProbe) start() {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.base, h.max = m.HeapAlloc, 0
}

func (h *heapProbe) measure() {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if m.HeapAlloc > h.base {
		h.max = max(h.max, m.HeapAlloc-h.base)
	}
}

// Between two pages, a view keeps what it shows and not the events it
// read: a timeline of 20 MiB of events keeps less than 1 MiB, an agent's
// detail not much more than itself.
func TestViewsKeepWhatTheyShow(t *testing.T) {
	probe := &heapProbe{}
	base, _ := bigRun{agents: 4, calls: 40, text: 64 << 10}.store(t)
	s := &pageStore{Store: base, each: probe.measure}

	probe.start()
	tl, err := trace.LoadTimeline(t.Context(), s, "big")
	require.NoError(t, err)
	require.Len(t, s.read(), 12, "the probe measured at each of 12 pages (10 MiB without bodies)")
	t.Logf("timeline: kept %d bytes between pages", probe.max)
	assert.Less(t, probe.max, uint64(1<<20), "a timeline of 10 MiB of events (20 MiB with bodies) keeps less than 1 MiB")

	probe.start()
	d, err := trace.LoadAgent(t.Context(), s, "big", tl.Steps[0].Nodes[0].Agents[1].ID)
	require.NoError(t, err)
	shown, err := json.Marshal(d)
	require.NoError(t, err)
	t.Logf("agent: kept %d bytes between pages, shows %d", probe.max, len(shown))
	// The agent's tool outputs and answers are 5 MiB of its 25 MiB of
	// events, bodies included: it keeps them, once.
	assert.Less(t, probe.max, uint64(len(shown))+1<<20, "an agent's detail keeps what it shows")
}

// A view cuts what it keeps: each text and JSON value at 256 KiB, an
// agent's detail at 16 MiB in all.
func TestViewsCutLargeItems(t *testing.T) {
	const itemCap = 256 << 10
	big := strings.Repeat("€", 400_000) // 1.2 MB, 3 bytes a character
	args, err := json.Marshal(map[string]string{"text": big})
	require.NoError(t, err)
	var specs []any
	specs = append(specs,
		graph.EventRunStart, "wf", 0, nil,
		graph.EventNodeStart, "wf/n", 0, nil,
		"agent_start", "wf/n/agent:w", 0, agentevent.Info{Agent: "w", Task: big},
		"snapshot", "wf/n/agent:w", 0, json.RawMessage(args),
		"tool_call", "wf/n/agent:w/tool:c0", 0, tools.CallEvent{ID: "c0", Name: "echo", Args: args},
		"tool_result", "wf/n/agent:w/tool:c0", 0, tools.ResultEvent{ID: "c0", Name: "echo", Status: "ok", Output: big},
	)
	// 80 more outputs of 256 KiB: 20 MiB, more than a detail keeps.
	small := strings.Repeat("x", itemCap)
	for i := 1; i <= 80; i++ {
		id := fmt.Sprint("c", i)
		specs = append(specs, "tool_result", "wf/n/agent:w/tool:"+id, 0, tools.ResultEvent{ID: id, Name: "echo", Status: "ok", Output: small})
	}
	specs = append(specs,
		"agent_end", "wf/n/agent:w", 0, agentevent.Info{Agent: "w", Output: "done"},
		graph.EventInterrupt, "wf/n", 0, []map[string]any{{"id": "q1", "node": "n", "path": "wf/n", "payload": map[string]string{"plan": big}}},
	)
	evs := synthetic(t, specs...)
	run := trace.RunInfo{ID: "r", Graph: "wf", Status: trace.StatusInterrupted}
	d, ok := trace.BuildAgent(run, evs, 3)
	require.True(t, ok)

	// A cut keeps the start of a text, to a character's boundary, and a
	// note of the cut.
	cut := func(whole string) string {
		n := itemCap
		for !utf8.RuneStart(whole[n]) {
			n--
		}
		return whole[:n] + "\n" + fmt.Sprintf("[cut: the first %d of %d bytes are shown]", n, len(whole))
	}
	assert.True(t, strings.HasSuffix(d.Task, "€\n[cut: the first 262143 of 1200000 bytes are shown]"), "a whole € fits in 262,143 bytes")
	sameText(t, cut(big), d.Task, "the task")
	sameText(t, cut(big), d.ToolCalls[0].Output, "a tool's output")
	assert.True(t, utf8.ValidString(d.ToolCalls[0].Output))
	var s string
	require.NoError(t, json.Unmarshal(d.ToolCalls[0].Args, &s), "cut arguments are a JSON string")
	sameText(t, cut(string(args)), s, "a tool call's arguments")
	require.NoError(t, json.Unmarshal(d.Snapshots[0].Snapshot, &s), "a cut snapshot is a JSON string")
	sameText(t, cut(string(args)), s, "a snapshot")

	shown, err := json.Marshal(d)
	require.NoError(t, err)
	assert.Less(t, len(shown), 16<<20+81*100, "a detail holds 16 MiB of texts at most, and the notes of the cuts")
	last := d.ToolCalls[len(d.ToolCalls)-1].Output
	assert.Equal(t, fmt.Sprintf("[cut: the first 0 of %d bytes are shown]", itemCap), last, "nothing left for the last outputs")
	sameText(t, small, d.ToolCalls[1].Output, "an output of 256 KiB is whole")

	tl := trace.BuildTimeline(run, evs)
	require.Len(t, tl.Interrupts, 1)
	require.NoError(t, json.Unmarshal(tl.Interrupts[0].Payload, &s), "a cut payload is a JSON string")
	payload, err := json.Marshal(map[string]string{"plan": big})
	require.NoError(t, err)
	sameText(t, cut(string(payload)), s, "an interrupt's payload")
}

// sameText checks that got is want, telling their lengths and ends when
// not (they are too long to show).
func sameText(t *testing.T, want, got, name string) {
	t.Helper()
	if got != want {
		end := func(s string) string { return s[max(len(s)-60, 0):] }
		t.Errorf("%s: got %d bytes ending %q, want %d ending %q", name, len(got), end(got), len(want), end(want))
	}
}

// BenchmarkLoadTimeline builds the timeline of a run of 4,816 events
// (10 MiB without bodies, 30 MiB with them), and reports the bytes it
// read, the most it read in one call, and the most it kept between two
// pages (measured once, outside the timed loop).
func BenchmarkLoadTimeline(b *testing.B) {
	base, _ := bigRun{agents: 6, calls: 200, text: 8 << 10}.store(b)
	probe := &heapProbe{}
	s := &pageStore{Store: base, each: probe.measure}
	probe.start()
	if _, err := trace.LoadTimeline(b.Context(), s, "big"); err != nil {
		b.Fatal(err)
	}
	s.each = nil
	s.read()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := trace.LoadTimeline(b.Context(), s, "big"); err != nil {
			b.Fatal(err)
		}
	}
	reportPages(b, s.read())
	b.ReportMetric(float64(probe.max), "retained-bytes")
}

// BenchmarkLoadAgent builds the detail of one agent of that run.
func BenchmarkLoadAgent(b *testing.B) {
	base, _ := bigRun{agents: 6, calls: 200, text: 8 << 10}.store(b)
	s := &pageStore{Store: base}
	tl, err := trace.LoadTimeline(b.Context(), s, "big")
	require.NoError(b, err)
	s.read()
	id := tl.Steps[0].Nodes[0].Agents[5].ID
	b.ReportAllocs()
	for b.Loop() {
		if _, err := trace.LoadAgent(b.Context(), s, "big", id); err != nil {
			b.Fatal(err)
		}
	}
	reportPages(b, s.read())
}

func reportPages(b *testing.B, pages []page) {
	var all, most int64
	var events int
	for _, p := range pages {
		all += p.bytes
		most = max(most, p.bytes)
		events += p.events
	}
	b.ReportMetric(float64(all)/float64(b.N), "bytes-read/op")
	b.ReportMetric(float64(events)/float64(b.N), "events-read/op")
	b.ReportMetric(float64(len(pages))/float64(b.N), "pages/op")
	b.ReportMetric(float64(most), "max-page-bytes")
}
