package tracetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/trace"
)

// rule is one subtest of the suite: a rule of the Store contract and the
// test that checks it against a fresh Store.
type rule struct {
	name string
	test func(t *testing.T, s trace.Store)
}

// Run checks that the Stores returned by newStore satisfy the trace.Store
// contract. newStore is called once per subtest and must return an empty
// Store; it should register any cleanup with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) trace.Store) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) { r.test(t, newStore(t)) })
	}
}

var rules = []rule{
	{"RunRoundTrips", testRunRoundTrips},
	{"CreateRunTwiceFails", testCreateRunTwice},
	{"UnknownRunIsNotFound", testUnknownRun},
	{"EventsRoundTrip", testEventsRoundTrip},
	{"BodiesOnlyWhenAsked", testBodiesOnlyWhenAsked},
	{"EventsComeInSeqOrder", testEventsInSeqOrder},
	{"AppendingAgainKeepsTheFirst", testAppendAgain},
	{"AppendIsAllOrNone", testAppendAllOrNone},
	{"EventQueryFilters", testEventQueryFilters},
	{"APageEndsAtItsBytes", testPageBytes},
	{"APageIsBoundedByDefault", testPageDefaults},
	{"APageCountsTheBytesOfTheEventsItSelects", testPageBytesFiltered},
	{"AllEventsReadsEveryPage", testAllEvents},
	{"FinishRunKeepsTheRest", testFinishRun},
	{"RunsNewestFirstAndFiltered", testRuns},
	{"BeforeIDKeepsTheRunsAfterARun", testBeforeID},
	{"AllRunsReadsEachRunOnceAcrossEqualTimes", testAllRuns},
	{"BriefRunsLeaveTheLargeFieldsOut", testBriefRuns},
	{"DeleteRunRemovesItsEvents", testDeleteRun},
	{"LargeAndUnusualPayloads", testLargePayloads},
	{"ConcurrentWriters", testConcurrentWriters},
	{"PruneKeepsTheNewestRunsOfEachOwner", testPruneByCount},
	{"PruneRemovesRunsOlderThanMaxAge", testPruneByAge},
	{"PruneDryRunAndOneOwner", testPruneDryRunAndOwner},
	{"PruneDefaults", testPruneDefaults},
	{"OwnerBytesCountsTheOwnersRuns", testOwnerBytes},
}

// base is the time the suite's runs start at, give or take.
var base = time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))

// micro is t as every Store gives it back: to the microsecond, in UTC.
func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func run(id string, started time.Time) trace.RunInfo {
	return trace.RunInfo{
		ID: id, Thread: "th-" + id, GraphThread: "alice/th-" + id, Workflow: "research", Graph: "coor",
		Owner: "alice", Status: trace.StatusRunning, Start: trace.StartInput,
		Input:     json.RawMessage(`[{"channel":"question","value":"why?"}]`),
		Runtime:   map[string]string{"coorflow.owner": "alice"},
		StartedAt: started,
	}
}

func event(runID string, seq int64, kind, path string) trace.Event {
	return trace.Event{
		RunID: runID, Seq: seq, Kind: kind, Path: path, Node: "team", Step: int(seq % 5), Attempt: 1,
		Time: base.Add(time.Duration(seq) * time.Millisecond), Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq)),
	}
}

func create(t *testing.T, s trace.Store, runs ...trace.RunInfo) {
	t.Helper()
	for _, r := range runs {
		require.NoError(t, s.CreateRun(t.Context(), r))
	}
}

func seqs(events []trace.Event) []int64 {
	out := make([]int64, len(events))
	for i, e := range events {
		out[i] = e.Seq
	}
	return out
}

func testRunRoundTrips(t *testing.T, s trace.Store) {
	want := run("r1", base)
	create(t, s, want)
	got, err := s.Run(t.Context(), "r1")
	require.NoError(t, err)
	want.StartedAt = micro(want.StartedAt)
	assert.Equal(t, want, got)
}

func testCreateRunTwice(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base))
	assert.ErrorIs(t, s.CreateRun(t.Context(), run("r1", base)), trace.ErrRunExists)
}

func testUnknownRun(t *testing.T, s trace.Store) {
	ctx := t.Context()
	_, err := s.Run(ctx, "nope")
	assert.ErrorIs(t, err, trace.ErrNotFound, "Run")
	_, err = s.Events(ctx, "nope", trace.EventQuery{})
	assert.ErrorIs(t, err, trace.ErrNotFound, "Events")
	assert.ErrorIs(t, s.FinishRun(ctx, run("nope", base)), trace.ErrNotFound, "FinishRun")
	assert.ErrorIs(t, s.DeleteRun(ctx, "nope"), trace.ErrNotFound, "DeleteRun")
	assert.ErrorIs(t, s.AppendEvents(ctx, []trace.Event{event("nope", 1, "run_start", "wf")}), trace.ErrNotFound, "AppendEvents")
}

func testEventsRoundTrip(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base))
	want := []trace.Event{
		{RunID: "r1", Seq: 1, Kind: "run_start", Path: "coor", Time: base},
		{RunID: "r1", Seq: 2, Kind: "node_end", Path: "coor/team", Node: "team", Step: 3, Attempt: 2,
			Time: base.Add(time.Second), Duration: 1500 * time.Millisecond, Error: "boom"},
		{RunID: "r1", Seq: 3, Kind: "model_call", Path: "coor/team/step:s1/agent:researcher", Node: "team", Step: 3, Attempt: 1,
			Time: base.Add(2 * time.Second), Agent: "researcher", Payload: json.RawMessage(`{"agent":"researcher","prompt_tokens":12}`),
			Hash: "0123456789abcdef", Request: json.RawMessage(`{"messages":[]}`), Response: json.RawMessage(`[{"content":"hi"}]`)},
	}
	require.NoError(t, s.AppendEvents(t.Context(), want))
	got, err := s.Events(t.Context(), "r1", trace.EventQuery{Bodies: true})
	require.NoError(t, err)
	for i := range want {
		want[i].Time = micro(want[i].Time)
	}
	assert.Equal(t, want, got)
}

func testBodiesOnlyWhenAsked(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base))
	ev := event("r1", 1, "model_call", "wf/a")
	ev.Hash, ev.Request, ev.Response = "abc", json.RawMessage(`{"messages":[1]}`), json.RawMessage(`[2]`)
	require.NoError(t, s.AppendEvents(t.Context(), []trace.Event{ev}))
	got, err := s.Events(t.Context(), "r1", trace.EventQuery{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "abc", got[0].Hash, "the hash is always read")
	assert.Nil(t, got[0].Request)
	assert.Nil(t, got[0].Response)
	assert.JSONEq(t, `{"n":1}`, string(got[0].Payload))
}

func testEventsInSeqOrder(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base))
	require.NoError(t, s.AppendEvents(t.Context(), []trace.Event{event("r1", 3, "a", "wf"), event("r1", 1, "a", "wf")}))
	require.NoError(t, s.AppendEvents(t.Context(), []trace.Event{event("r1", 2, "a", "wf"), event("r1", 10, "a", "wf")}))
	got, err := s.Events(t.Context(), "r1", trace.EventQuery{})
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 3, 10}, seqs(got))
}

func testAppendAgain(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base))
	first := event("r1", 1, "custom", "wf")
	require.NoError(t, s.AppendEvents(t.Context(), []trace.Event{first}))
	again := first
	again.Payload = json.RawMessage(`{"n":"changed"}`)
	require.NoError(t, s.AppendEvents(t.Context(), []trace.Event{again, event("r1", 2, "custom", "wf")}))
	got, err := s.Events(t.Context(), "r1", trace.EventQuery{})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, seqs(got))
	assert.JSONEq(t, `{"n":1}`, string(got[0].Payload))
}

func testAppendAllOrNone(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base))
	err := s.AppendEvents(t.Context(), []trace.Event{event("r1", 1, "custom", "wf"), event("ghost", 1, "custom", "wf")})
	require.ErrorIs(t, err, trace.ErrNotFound)
	got, err := s.Events(t.Context(), "r1", trace.EventQuery{})
	require.NoError(t, err)
	assert.Empty(t, got, "no event of a failed batch is kept")
	assert.NoError(t, s.AppendEvents(t.Context(), nil), "an empty batch")
}

func testEventQueryFilters(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base), run("r2", base))
	paths := []string{"wf", "wf/a_b", "wf/a_b/agent:x", "wf/aXb", "wf/a_bc", "wf/a%b/c", "wf/a_b/agent:x/tool"}
	var evs []trace.Event
	for i, p := range paths {
		kind := "model_call"
		if i%2 == 0 {
			kind = "tool_call"
		}
		evs = append(evs, event("r1", int64(i+1), kind, p))
	}
	evs = append(evs, event("r2", 1, "model_call", "wf/a_b"))
	require.NoError(t, s.AppendEvents(t.Context(), evs))
	tests := []struct {
		name string
		q    trace.EventQuery
		want []int64
	}{
		{"all", trace.EventQuery{}, []int64{1, 2, 3, 4, 5, 6, 7}},
		{"after", trace.EventQuery{After: 5}, []int64{6, 7}},
		{"until", trace.EventQuery{Until: 2}, []int64{1, 2}},
		{"after and until", trace.EventQuery{After: 2, Until: 4}, []int64{3, 4}},
		{"kinds", trace.EventQuery{Kinds: []string{"tool_call"}}, []int64{1, 3, 5, 7}},
		{"two kinds", trace.EventQuery{Kinds: []string{"tool_call", "model_call"}}, []int64{1, 2, 3, 4, 5, 6, 7}},
		{"path and below, wildcards taken literally", trace.EventQuery{Path: "wf/a_b"}, []int64{2, 3, 7}},
		{"percent taken literally", trace.EventQuery{Path: "wf/a%b"}, []int64{6}},
		{"path and kind", trace.EventQuery{Path: "wf/a_b", Kinds: []string{"tool_call"}}, []int64{3, 7}},
		{"limit", trace.EventQuery{Limit: 2, After: 1}, []int64{2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Events(t.Context(), "r1", tt.q)
			require.NoError(t, err)
			assert.Equal(t, tt.want, seqs(got))
		})
	}
}

func testFinishRun(t *testing.T, s trace.Store) {
	started := run("r1", base)
	create(t, s, started)
	ended := base.Add(time.Minute)
	fin := trace.RunInfo{ID: "r1", Status: trace.StatusError, EndedAt: &ended, Error: "node failed",
		FinalState: json.RawMessage(`{"count":2}`), Events: 42, Owner: "mallory", Workflow: "other"}
	require.NoError(t, s.FinishRun(t.Context(), fin))
	got, err := s.Run(t.Context(), "r1")
	require.NoError(t, err)
	want := started
	want.StartedAt = micro(base)
	e := micro(ended)
	want.Status, want.EndedAt, want.Error, want.FinalState, want.Events = trace.StatusError, &e, "node failed", fin.FinalState, 42
	assert.Equal(t, want, got, "owner and workflow are not changed by FinishRun")
}

func testRuns(t *testing.T, s trace.Store) {
	r1, r2, r3, r4 := run("r1", base), run("r2", base.Add(time.Second)), run("r3", base.Add(2*time.Second)), run("r4", base.Add(3*time.Second))
	r2.Owner, r3.Workflow, r4.Thread = "bob", "coding", "th-r1"
	create(t, s, r1, r3, r4, r2)
	ended := base.Add(time.Hour)
	require.NoError(t, s.FinishRun(t.Context(), trace.RunInfo{ID: "r3", Status: trace.StatusDone, EndedAt: &ended}))
	ids := func(runs []trace.RunInfo) []string {
		out := make([]string, len(runs))
		for i, r := range runs {
			out[i] = r.ID
		}
		return out
	}
	tests := []struct {
		name string
		q    trace.RunQuery
		want []string
	}{
		{"all, newest first", trace.RunQuery{}, []string{"r4", "r3", "r2", "r1"}},
		{"owner", trace.RunQuery{Owner: "alice"}, []string{"r4", "r3", "r1"}},
		{"thread", trace.RunQuery{Thread: "th-r1"}, []string{"r4", "r1"}},
		{"workflow", trace.RunQuery{Workflow: "coding"}, []string{"r3"}},
		{"status", trace.RunQuery{Status: trace.StatusRunning}, []string{"r4", "r2", "r1"}},
		{"before", trace.RunQuery{Before: micro(base.Add(2 * time.Second))}, []string{"r2", "r1"}},
		{"limit", trace.RunQuery{Limit: 2}, []string{"r4", "r3"}},
		{"nothing", trace.RunQuery{Owner: "carol"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Runs(t.Context(), tt.q)
			require.NoError(t, err)
			assert.Equal(t, tt.want, ids(got))
		})
	}
}

// sameTimes creates runs three of which start at each time: the ids, in
// the order of Runs (newest first, then by id descending). Every other
// run is bob's.
func sameTimes(t *testing.T, s trace.Store) []string {
	t.Helper()
	var want []string
	for i := range 4 {
		at := base.Add(time.Duration(i) * time.Second)
		for _, id := range []string{"b", "c", "a"} { // not created in order
			r := run(fmt.Sprintf("r%d-%s", i, id), at)
			if id == "c" {
				r.Owner = "bob"
			}
			create(t, s, r)
		}
		want = append([]string{fmt.Sprintf("r%d-c", i), fmt.Sprintf("r%d-b", i), fmt.Sprintf("r%d-a", i)}, want...)
	}
	return want
}

func testBeforeID(t *testing.T, s trace.Store) {
	sameTimes(t, s)
	at1 := micro(base.Add(time.Second))
	tests := []struct {
		name string
		q    trace.RunQuery
		want []string
	}{
		{"the runs after r1-b: r1-a, then the earlier ones",
			trace.RunQuery{Before: at1, BeforeID: "r1-b"}, []string{"r1-a", "r0-c", "r0-b", "r0-a"}},
		{"an id after every run of its time keeps them all",
			trace.RunQuery{Before: at1, BeforeID: "zz"}, []string{"r1-c", "r1-b", "r1-a", "r0-c", "r0-b", "r0-a"}},
		{"the first id of its time keeps none of them",
			trace.RunQuery{Before: at1, BeforeID: "r1-a"}, []string{"r0-c", "r0-b", "r0-a"}},
		{"without BeforeID, Before keeps none of its time",
			trace.RunQuery{Before: at1}, []string{"r0-c", "r0-b", "r0-a"}},
		{"without Before, BeforeID is ignored",
			trace.RunQuery{BeforeID: "r0-a", Limit: 2}, []string{"r3-c", "r3-b"}},
		{"with the other filters and a Limit",
			trace.RunQuery{Owner: "alice", Before: at1, BeforeID: "r1-c", Limit: 3}, []string{"r1-b", "r1-a", "r0-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, runIDs(t, s, tt.q))
			var matched []string
			for _, id := range tt.want {
				r, err := s.Run(t.Context(), id)
				require.NoError(t, err)
				if tt.q.Match(r) {
					matched = append(matched, id)
				}
			}
			assert.Equal(t, tt.want, matched, "RunQuery.Match agrees with the store")
		})
	}
}

func testAllRuns(t *testing.T, s trace.Store) {
	want := sameTimes(t, s)
	read := func(q trace.RunQuery) []string {
		t.Helper()
		got := []string{}
		for r, err := range trace.AllRuns(t.Context(), s, q) {
			require.NoError(t, err)
			got = append(got, r.ID)
		}
		return got
	}
	for _, page := range []int{1, 2, 4, 5, 12, 100} {
		assert.Equal(t, want, read(trace.RunQuery{Limit: page}), "pages of %d", page)
	}
	var alice []string
	for _, id := range want {
		if !strings.HasSuffix(id, "-c") {
			alice = append(alice, id)
		}
	}
	assert.Equal(t, alice, read(trace.RunQuery{Owner: "alice", Limit: 2}), "an owner's, by pages of 2")
	assert.Equal(t, want[5:], read(trace.RunQuery{Before: micro(base.Add(2 * time.Second)), BeforeID: "r2-b", Limit: 2}),
		"from a cursor on")
	assert.Equal(t, want, read(trace.RunQuery{}), "pages of RunPage")
	n := 0
	for range trace.AllRuns(t.Context(), s, trace.RunQuery{Limit: 2}) {
		if n++; n == 3 {
			break
		}
	}
	assert.Equal(t, 3, n, "the reader can stop")
}

func testBriefRuns(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base), run("r2", base.Add(time.Second)))
	ended := base.Add(time.Minute)
	require.NoError(t, s.FinishRun(t.Context(), trace.RunInfo{ID: "r1", Status: trace.StatusDone, EndedAt: &ended,
		FinalState: json.RawMessage(`{"big":"` + strings.Repeat("x", 10_000) + `"}`), Events: 7}))
	full, err := s.Runs(t.Context(), trace.RunQuery{})
	require.NoError(t, err)
	require.Len(t, full, 2)
	require.NotEmpty(t, full[1].FinalState, "precondition: r1 has a final state")
	brief, err := s.Runs(t.Context(), trace.RunQuery{Brief: true})
	require.NoError(t, err)
	require.Len(t, brief, 2)
	for i, r := range full {
		r.Input, r.Runtime, r.FinalState = nil, nil, nil
		assert.Equal(t, r, brief[i], "a brief run is the run without Input, Runtime and FinalState")
	}
}

func testDeleteRun(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base), run("r2", base))
	require.NoError(t, s.AppendEvents(t.Context(), []trace.Event{event("r1", 1, "a", "wf"), event("r2", 1, "a", "wf")}))
	require.NoError(t, s.DeleteRun(t.Context(), "r1"))
	_, err := s.Run(t.Context(), "r1")
	assert.ErrorIs(t, err, trace.ErrNotFound)
	_, err = s.Events(t.Context(), "r1", trace.EventQuery{})
	assert.ErrorIs(t, err, trace.ErrNotFound)
	create(t, s, run("r1", base))
	got, err := s.Events(t.Context(), "r1", trace.EventQuery{})
	require.NoError(t, err)
	assert.Empty(t, got, "a run created again under a deleted id has no events")
	got, err = s.Events(t.Context(), "r2", trace.EventQuery{})
	require.NoError(t, err)
	assert.Len(t, got, 1, "the other run keeps its events")
}

func testLargePayloads(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base))
	big := `{"text":"` + strings.Repeat("0123456789", 100_000) + `"}`
	odd := `{"text":"naïve — 日本語 \u0000 \"quoted\" \\ back"}`
	require.NoError(t, s.AppendEvents(t.Context(), []trace.Event{
		{RunID: "r1", Seq: 1, Kind: "snapshot", Path: "wf/é ü/agent:ß", Time: base, Payload: json.RawMessage(big)},
		{RunID: "r1", Seq: 2, Kind: "custom", Path: "wf", Time: base, Payload: json.RawMessage(odd)},
	}))
	got, err := s.Events(t.Context(), "r1", trace.EventQuery{Path: "wf/é ü"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, big, string(got[0].Payload), "payloads are kept byte for byte")
	got, err = s.Events(t.Context(), "r1", trace.EventQuery{After: 1})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, odd, string(got[0].Payload))
}

func testConcurrentWriters(t *testing.T, s trace.Store) {
	const runs, batches, perBatch = 4, 10, 20
	for r := range runs {
		create(t, s, run(fmt.Sprint("r", r), base))
	}
	var wg sync.WaitGroup
	errs := make(chan error, runs*batches)
	for r := range runs {
		for b := range batches {
			wg.Go(func() {
				evs := make([]trace.Event, perBatch)
				for i := range evs {
					evs[i] = event(fmt.Sprint("r", r), int64(b*perBatch+i+1), "custom", "wf")
				}
				errs <- s.AppendEvents(t.Context(), evs)
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for r := range runs {
		got, err := s.Events(t.Context(), fmt.Sprint("r", r), trace.EventQuery{})
		require.NoError(t, err)
		assert.Len(t, got, batches*perBatch)
	}
}

// finished returns r ended at t.
func finished(r trace.RunInfo, t time.Time) trace.RunInfo {
	r.Status, r.EndedAt = trace.StatusDone, &t
	return r
}

func runIDs(t *testing.T, s trace.Store, q trace.RunQuery) []string {
	t.Helper()
	runs, err := s.Runs(t.Context(), q)
	require.NoError(t, err)
	out := []string{}
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func prunedIDs(rep trace.PruneReport) []string {
	out := []string{}
	for _, r := range rep.Runs {
		out = append(out, r.Run)
	}
	return out
}

func testPruneByCount(t *testing.T, s trace.Store) {
	var evs []trace.Event
	for i := range 5 {
		id := fmt.Sprint("a", i)
		create(t, s, finished(run(id, base.Add(time.Duration(i)*time.Minute)), base.Add(time.Duration(i)*time.Minute+time.Second)))
		evs = append(evs, event(id, 1, "custom", "wf"))
	}
	for i := range 2 {
		b := finished(run(fmt.Sprint("b", i), base.Add(-time.Hour)), base.Add(-time.Hour))
		b.Owner = "bob"
		create(t, s, b)
	}
	running := run("a-running", base.Add(-time.Minute)) // older than every run of alice, still running
	create(t, s, running)
	require.NoError(t, s.AppendEvents(t.Context(), evs))

	rep, err := s.Prune(t.Context(), trace.RetentionPolicy{MaxRuns: 3, MaxAge: -1, Now: base.Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, []string{"a0", "a1"}, prunedIDs(rep), "the oldest finished runs of alice, oldest first")
	assert.Equal(t, 6, rep.Kept)
	require.Len(t, rep.Runs, 2)
	assert.Equal(t, trace.PrunedRun{Run: "a0", Owner: "alice", LastActivity: micro(base.Add(time.Second)), Reason: trace.PrunedForCount}, rep.Runs[0])
	assert.Equal(t, []string{"a4", "a3", "a2", "a-running"}, runIDs(t, s, trace.RunQuery{Owner: "alice"}),
		"a run still recording is not pruned for the count")
	assert.Equal(t, []string{"b1", "b0"}, runIDs(t, s, trace.RunQuery{Owner: "bob"}), "the count is per owner")
	_, err = s.Events(t.Context(), "a0", trace.EventQuery{})
	assert.ErrorIs(t, err, trace.ErrNotFound)
	create(t, s, run("a0", base))
	got, err := s.Events(t.Context(), "a0", trace.EventQuery{})
	require.NoError(t, err)
	assert.Empty(t, got, "the events of a pruned run are removed with it")
	got, err = s.Events(t.Context(), "a2", trace.EventQuery{})
	require.NoError(t, err)
	assert.Len(t, got, 1, "a kept run keeps its events")
}

func testPruneByAge(t *testing.T, s trace.Store) {
	now := base.Add(48 * time.Hour)
	create(t, s,
		finished(run("old", base), base.Add(time.Minute)),
		finished(run("long", base), now.Add(-time.Hour)), // started long ago, ended recently
		run("abandoned", base),                           // never ended
		finished(run("new", now.Add(-time.Hour)), now.Add(-time.Minute)),
	)
	rep, err := s.Prune(t.Context(), trace.RetentionPolicy{MaxAge: 24 * time.Hour, MaxRuns: -1, Now: now})
	require.NoError(t, err)
	assert.Equal(t, []string{"abandoned", "old"}, prunedIDs(rep))
	for _, r := range rep.Runs {
		assert.Equal(t, trace.PrunedForAge, r.Reason)
	}
	assert.Equal(t, 2, rep.Kept)
	assert.Equal(t, []string{"new", "long"}, runIDs(t, s, trace.RunQuery{}))
}

func testPruneDryRunAndOwner(t *testing.T, s trace.Store) {
	bob := finished(run("b", base), base)
	bob.Owner = "bob"
	create(t, s, finished(run("a", base), base), bob)
	later := base.Add(365 * 24 * time.Hour)
	rep, err := s.Prune(t.Context(), trace.RetentionPolicy{Now: later, DryRun: true})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "b"}, prunedIDs(rep), "a dry run reports")
	assert.ElementsMatch(t, []string{"a", "b"}, runIDs(t, s, trace.RunQuery{}), "and removes nothing")

	rep, err = s.Prune(t.Context(), trace.RetentionPolicy{Now: later, Owner: "bob"})
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, prunedIDs(rep))
	assert.Equal(t, 0, rep.Kept, "only bob's runs are counted")
	assert.Equal(t, []string{"a"}, runIDs(t, s, trace.RunQuery{}), "other owners' runs are left alone")
}

func testPruneDefaults(t *testing.T, s trace.Store) {
	create(t, s, finished(run("month", base), base), finished(run("week", base.Add(24*time.Hour)), base.Add(7*24*time.Hour)))
	rep, err := s.Prune(t.Context(), trace.RetentionPolicy{Now: base.Add(trace.DefaultMaxAge + time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, []string{"month"}, prunedIDs(rep), "a zero policy removes runs older than 30 days")
	assert.Equal(t, []string{"week"}, runIDs(t, s, trace.RunQuery{}))

	rep, err = s.Prune(t.Context(), trace.RetentionPolicy{})
	require.NoError(t, err)
	assert.Equal(t, []string{"week"}, prunedIDs(rep), "ages are measured from now by default")
	assert.Empty(t, runIDs(t, s, trace.RunQuery{}))
}

// testOwnerBytes: a Sizer counts an owner's runs and events, their
// bodies too, and no other owner's; a deleted run is no longer counted.
func testOwnerBytes(t *testing.T, s trace.Store) {
	sz, ok := s.(trace.Sizer)
	if !ok {
		t.Skip("the store is not a trace.Sizer")
	}
	n, err := sz.OwnerBytes(t.Context(), "alice")
	require.NoError(t, err)
	assert.Zero(t, n)
	r1, r2, other := run("r1", base), run("r2", base), run("r3", base)
	other.Owner = "bob"
	create(t, s, r1, r2, other)
	evs := []trace.Event{event("r1", 1, "a", "wf"), event("r1", 2, "b", "wf/é"), event("r2", 1, "a", "wf"), event("r3", 1, "a", "wf")}
	evs[1].Request, evs[1].Response, evs[1].Hash, evs[1].Error = json.RawMessage(`{"q":1}`), json.RawMessage(strings.Repeat("x", 10_000)), "h", "boom"
	require.NoError(t, s.AppendEvents(t.Context(), evs))
	want := r1.Size() + r2.Size() + evs[0].Size() + evs[1].Size() + evs[2].Size()
	n, err = sz.OwnerBytes(t.Context(), "alice")
	require.NoError(t, err)
	assert.InDelta(t, want, n, 2, "about the sizes of alice's runs and events (runtime values as JSON)")

	require.NoError(t, s.DeleteRun(t.Context(), "r1"))
	n, err = sz.OwnerBytes(t.Context(), "alice")
	require.NoError(t, err)
	assert.InDelta(t, r2.Size()+evs[2].Size(), n, 1)
}

// sized is an event of run r whose payload holds n bytes (and a body of
// b bytes each way when b > 0).
func sized(r string, seq int64, kind string, n, b int) trace.Event {
	e := event(r, seq, kind, "wf/a")
	e.Payload = json.RawMessage(`"` + strings.Repeat("p", n) + `"`)
	if b > 0 {
		e.Hash = "h"
		e.Request = json.RawMessage(`"` + strings.Repeat("q", b) + `"`)
		e.Response = json.RawMessage(`"` + strings.Repeat("r", b) + `"`)
	}
	return e
}

func sizes(evs []trace.Event) (sum int64) {
	for _, e := range evs {
		sum += e.Size()
	}
	return sum
}

func testPageBytes(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base))
	var evs []trace.Event
	for i := range int64(10) {
		evs = append(evs, sized("r1", i+1, "model_call", 1000, 5000))
	}
	evs = append(evs, sized("r1", 11, "model_call", 50_000, 0))
	require.NoError(t, s.AppendEvents(t.Context(), evs))
	one := evs[0]
	one.Request, one.Response = nil, nil
	small := one.Size()

	got, err := s.Events(t.Context(), "r1", trace.EventQuery{MaxBytes: 3*small + small/2})
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 3}, seqs(got), "as many as fit without bodies")

	got, err = s.Events(t.Context(), "r1", trace.EventQuery{MaxBytes: 3*small + small/2, Bodies: true})
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, seqs(got), "bodies count when read; the first event always comes")
	assert.Greater(t, sizes(got), 3*small+small/2)

	got, err = s.Events(t.Context(), "r1", trace.EventQuery{MaxBytes: 3 * small, After: 9})
	require.NoError(t, err)
	assert.Equal(t, []int64{10}, seqs(got), "the next event (~50 KB) does not fit")
	got, err = s.Events(t.Context(), "r1", trace.EventQuery{MaxBytes: 3 * small, After: 10})
	require.NoError(t, err)
	assert.Equal(t, []int64{11}, seqs(got), "an event larger than a page comes alone")

	got, err = s.Events(t.Context(), "r1", trace.EventQuery{MaxBytes: 10 * small, Limit: 4})
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 3, 4}, seqs(got), "Limit and MaxBytes both bound a page")
}

// A page's bytes are those of the events its query selects: the events
// its kinds and path leave out, however large, take no room in it.
func testPageBytesFiltered(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base))
	var evs []trace.Event
	for i := range int64(12) {
		e := sized("r1", i+1, "custom", 50_000, 0) // odd seqs: large, not selected
		if i%2 == 1 {
			e = sized("r1", i+1, "model_call", 100, 0)
			if i%4 == 3 {
				e.Path = "wf/b"
			}
		}
		evs = append(evs, e)
	}
	require.NoError(t, s.AppendEvents(t.Context(), evs))
	small := evs[1].Size()
	page := 3*small + small/2
	for _, tt := range []struct {
		name string
		q    trace.EventQuery
		want []int64
	}{
		{"kinds", trace.EventQuery{Kinds: []string{"model_call"}, MaxBytes: page}, []int64{2, 4, 6}},
		{"kinds and path", trace.EventQuery{Kinds: []string{"model_call"}, Path: "wf/a", MaxBytes: page}, []int64{2, 6, 10}},
		{"path", trace.EventQuery{Path: "wf/b", MaxBytes: page}, []int64{4, 8, 12}},
		{"path after", trace.EventQuery{Path: "wf/b", MaxBytes: page, After: 4}, []int64{8, 12}},
		{"kinds until", trace.EventQuery{Kinds: []string{"model_call"}, MaxBytes: page, Until: 5}, []int64{2, 4}},
	} {
		got, err := s.Events(t.Context(), "r1", tt.q)
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.want, seqs(got), tt.name)
	}
}

func testPageDefaults(t *testing.T, s trace.Store) {
	create(t, s, run("big", base), run("many", base))
	var evs []trace.Event
	for i := range int64(6) {
		evs = append(evs, sized("big", i+1, "custom", 1<<20, 0))
	}
	require.NoError(t, s.AppendEvents(t.Context(), evs))
	got, err := s.Events(t.Context(), "big", trace.EventQuery{})
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 3}, seqs(got), "about 3 MiB of 6 within the default 4 MiB")
	assert.LessOrEqual(t, sizes(got), int64(trace.DefaultEventBytes))

	evs = evs[:0]
	for i := range int64(trace.MaxEventLimit + 5) {
		evs = append(evs, trace.Event{RunID: "many", Seq: i + 1, Kind: "custom", Path: "wf", Time: base})
	}
	require.NoError(t, s.AppendEvents(t.Context(), evs))
	got, err = s.Events(t.Context(), "many", trace.EventQuery{})
	require.NoError(t, err)
	assert.Len(t, got, trace.MaxEventLimit)
	got, err = s.Events(t.Context(), "many", trace.EventQuery{Limit: trace.MaxEventLimit * 2})
	require.NoError(t, err)
	assert.Len(t, got, trace.MaxEventLimit, "a Limit above MaxEventLimit is MaxEventLimit")
}

func testAllEvents(t *testing.T, s trace.Store) {
	create(t, s, run("r1", base))
	var evs []trace.Event
	var want, wantCalls []int64
	for i := range int64(40) {
		kind := "custom"
		if i%3 == 0 {
			kind = "model_call"
			wantCalls = append(wantCalls, i+1)
		}
		evs = append(evs, sized("r1", i+1, kind, 500, 2000))
		want = append(want, i+1)
	}
	require.NoError(t, s.AppendEvents(t.Context(), evs))
	read := func(q trace.EventQuery) []int64 {
		t.Helper()
		var got []int64
		for e, err := range trace.AllEvents(t.Context(), s, "r1", q) {
			require.NoError(t, err)
			if q.Bodies && e.Kind == "model_call" {
				require.Len(t, e.Response, 2002, "event %d's body", e.Seq)
			}
			got = append(got, e.Seq)
		}
		return got
	}
	assert.Equal(t, want, read(trace.EventQuery{MaxBytes: 3000}), "pages of a few events")
	assert.Equal(t, want, read(trace.EventQuery{MaxBytes: 3000, Bodies: true}), "pages of one event with bodies")
	assert.Equal(t, wantCalls, read(trace.EventQuery{Kinds: []string{"model_call"}, Limit: 2}))
	assert.Equal(t, want[5:20], read(trace.EventQuery{After: 5, Until: 20, Limit: 4}))

	n := 0
	for range trace.AllEvents(t.Context(), s, "r1", trace.EventQuery{Limit: 3}) {
		n++
		if n == 5 {
			break
		}
	}
	assert.Equal(t, 5, n, "a reader stops when it likes")

	for _, err := range trace.AllEvents(t.Context(), s, "nope", trace.EventQuery{}) {
		assert.ErrorIs(t, err, trace.ErrNotFound)
	}
}
