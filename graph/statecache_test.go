package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

var (
	cacheList  = graph.NewKey("list", graph.Append[string]())
	cacheTags  = graph.NewKey("tags", graph.Merge[string, int]())
	cacheCount = graph.NewKey("n", graph.Sum[int]())
	cacheLast  = graph.NewKey[string]("last")
	cacheItem  = graph.NewKey[string]("item")
)

// loadCounter counts the reads of checkpoints and channel values that
// reach the saver.
type loadCounter struct {
	graph.Saver
	gets, blobs atomic.Int64
	failPuts    atomic.Int64 // PutCheckpoint calls to refuse
}

func (c *loadCounter) GetCheckpoint(ctx context.Context, ref graph.CheckpointRef) (graph.CheckpointRecord, error) {
	c.gets.Add(1)
	return c.Saver.GetCheckpoint(ctx, ref)
}

func (c *loadCounter) Blobs(ctx context.Context, thread, ns string, channels []string) ([]graph.Blob, error) {
	c.blobs.Add(1)
	return c.Saver.Blobs(ctx, thread, ns, channels)
}

func (c *loadCounter) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if c.failPuts.Load() > 0 && c.failPuts.Add(-1) >= 0 {
		return errDiskFull
	}
	return c.Saver.PutCheckpoint(ctx, cp, blobs)
}

// cacheGraph loops rounds times over a fan-out: "a" writes every kind of
// channel and sends two packets to "w"; the packets and "b" run in one
// step, and "c" joins them; then "a" again or the end.
func cacheGraph(t *testing.T, rounds int) *graph.Runnable {
	t.Helper()
	g := graph.New("cache", cacheList, cacheTags, cacheCount, cacheLast, cacheItem)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		n := cacheCount.Get(s)
		return graph.Send(graph.To("w", cacheItem.Set(fmt.Sprint("x", n))), graph.To("w", cacheItem.Set(fmt.Sprint("y", n)))).
			With(graph.AppendTo(cacheList, fmt.Sprint("a", n)), cacheTags.Set(map[string]int{fmt.Sprint("a", n): len(cacheList.Get(s))}),
				cacheCount.Set(1), cacheLast.Set(fmt.Sprint("a", n))), nil
	}, graph.Destinations("w"))
	g.AddNode("w", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(cacheList, cacheItem.Get(s))), nil
	})
	g.AddNode("b", func(ctx context.Context, s graph.State) (graph.Command, error) {
		// What a step sees of the list is what the steps before stored.
		return graph.Update(graph.AppendTo(cacheList, fmt.Sprint("b", len(cacheList.Get(s))))), nil
	})
	g.AddNode("c", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(cacheLast.Set(fmt.Sprint("c", len(cacheList.Get(s)))), cacheTags.Set(map[string]int{"c": cacheCount.Get(s)})), nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddJoin([]string{"b", "w"}, "c")
	g.AddConditionalEdges("c", func(ctx context.Context, s graph.State) (string, error) {
		if cacheCount.Get(s) < rounds {
			return "again", nil
		}
		return "end", nil
	}, graph.Branches{"again": "a", "end": graph.End})
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// stepThrough runs thread to its end with Step, continuing each step from
// the checkpoint the last one reported (through cache when it is not
// nil), and returns the snapshot of every checkpoint it reported.
func stepThrough(t *testing.T, r *graph.Runnable, s graph.Saver, cache *graph.StateCache, thread string) []graph.Snapshot {
	t.Helper()
	ctx := t.Context()
	base := []graph.Option{graph.WithSaver(s), graph.Thread(thread)}
	input, after := graph.Input(cacheLast.Set("start")), ""
	var snaps []graph.Snapshot
	for {
		opts := base
		if cache != nil {
			opts = append(opts, graph.WithStateCache(cache, after))
		}
		res, err := r.Step(ctx, input, opts...)
		require.NoError(t, err)
		snap, err := r.State(ctx, thread, graph.WithSaver(s), graph.FromCheckpoint(res.Checkpoint))
		require.NoError(t, err)
		snaps = append(snaps, snap)
		input, after = nil, res.Checkpoint
		if !res.More {
			return snaps
		}
	}
}

// sameCheckpoints checks that two runs stored the same checkpoints: the
// same values, steps, writers and next tasks.
func sameCheckpoints(t *testing.T, want, got []graph.Snapshot) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].State.Values(), got[i].State.Values(), "checkpoint %d", i)
		assert.Equal(t, want[i].Step, got[i].Step, "checkpoint %d", i)
		assert.Equal(t, want[i].Writers, got[i].Writers, "checkpoint %d", i)
		assert.Equal(t, want[i].Next, got[i].Next, "checkpoint %d", i)
	}
}

func TestAStepFromTheStateCacheStoresWhatAStepThatLoadsStores(t *testing.T) {
	r := cacheGraph(t, 4)
	saver := &loadCounter{Saver: memory.New()}
	want := stepThrough(t, r, saver, nil, "loads")
	loads := saver.gets.Load()

	saver.gets.Store(0)
	cache := graph.NewStateCache(graph.StateCacheConfig{})
	got := stepThrough(t, r, saver, cache, "cached")
	sameCheckpoints(t, want, got)
	// stepThrough's State reads are one GetCheckpoint each; the cached
	// steps read none (the first step finds no thread: one).
	assert.Equal(t, int64(len(got)+1), saver.gets.Load(), "reads of checkpoints with the cache")
	assert.Equal(t, int64(2*len(want)), loads, "reads of checkpoints without it")
	assert.Len(t, want, 12) // a (after the input), w+w+b, c: four times
	assert.Equal(t, graph.StateCacheStats{Entries: 1, Bytes: cache.Stats().Bytes, Hits: int64(len(got) - 1)}, cache.Stats())
}

func TestAStepLoadsTheStateItsCacheDoesNotHave(t *testing.T) {
	r := cacheGraph(t, 2)
	saver := &loadCounter{Saver: memory.New()}
	ctx := t.Context()
	want := stepThrough(t, r, saver, nil, "reference")

	// Each step on a worker of its own (a cache of its own): each loads.
	workers := []*graph.StateCache{graph.NewStateCache(graph.StateCacheConfig{}), graph.NewStateCache(graph.StateCacheConfig{})}
	thread := "two-workers"
	input, after := graph.Input(cacheLast.Set("start")), ""
	var got []graph.Snapshot
	for i := 0; ; i++ {
		before := saver.gets.Load()
		res, err := r.Step(ctx, input, graph.WithSaver(saver), graph.Thread(thread), graph.WithStateCache(workers[i%2], after))
		require.NoError(t, err)
		if i > 0 {
			assert.Equal(t, int64(1), saver.gets.Load()-before, "step %d read its checkpoint", i)
		}
		snap, err := r.State(ctx, thread, graph.WithSaver(saver), graph.FromCheckpoint(res.Checkpoint))
		require.NoError(t, err)
		got = append(got, snap)
		input, after = nil, res.Checkpoint
		if !res.More {
			break
		}
	}
	sameCheckpoints(t, want, got)

	// A cache that holds another checkpoint of the thread than the one
	// the step continues is not used: the step reads the thread.
	cache := graph.NewStateCache(graph.StateCacheConfig{})
	stale := []graph.Option{graph.WithSaver(saver), graph.Thread("stale")}
	res, err := r.Step(ctx, graph.Input(cacheLast.Set("start")), append(stale, graph.WithStateCache(cache, ""))...)
	require.NoError(t, err)
	first := res.Checkpoint
	res, err = r.Step(ctx, nil, append(stale, graph.WithStateCache(cache, first))...)
	require.NoError(t, err)
	before := saver.gets.Load()
	next, err := r.Step(ctx, nil, append(stale, graph.WithStateCache(cache, first))...)
	require.NoError(t, err)
	assert.Equal(t, int64(1), saver.gets.Load()-before, "first is not cached (the cache holds %s): the thread was read", res.Checkpoint)
	assert.Equal(t, res.Step+1, next.Step, "the step after the thread's newest ran")

	// A cached checkpoint that another writer has continued since is
	// refused when the step stores what follows it.
	res, err = r.Step(ctx, nil, append(stale, graph.WithStateCache(cache, next.Checkpoint))...)
	require.NoError(t, err)
	_, err = r.Step(ctx, nil, stale...) // another writer: no cache
	require.NoError(t, err)
	_, err = r.Step(ctx, nil, append(stale, graph.WithStateCache(cache, res.Checkpoint))...)
	require.ErrorIs(t, err, graph.ErrCheckpointConflict)
}

func TestAStepRetriedAfterAFailedSaveSeesTheStoredState(t *testing.T) {
	r := cacheGraph(t, 3)
	saver := &loadCounter{Saver: memory.New()}
	want := stepThrough(t, r, saver, nil, "reference")

	ctx := t.Context()
	cache := graph.NewStateCache(graph.StateCacheConfig{})
	thread := "retried"
	opts := []graph.Option{graph.WithSaver(saver), graph.Thread(thread)}
	input, after := graph.Input(cacheLast.Set("start")), ""
	var got []graph.Snapshot
	for i := 0; ; i++ {
		if i > 0 {
			// The step runs its nodes from the cached state, appends to
			// the list, and fails to store its checkpoint; its retry
			// must not see what the failed attempt appended.
			saver.failPuts.Store(1)
			_, err := r.Step(ctx, nil, append(opts, graph.WithStateCache(cache, after))...)
			require.ErrorIs(t, err, errDiskFull, "step %d", i)
		}
		res, err := r.Step(ctx, input, append(opts, graph.WithStateCache(cache, after))...)
		require.NoError(t, err)
		snap, err := r.State(ctx, thread, graph.WithSaver(saver), graph.FromCheckpoint(res.Checkpoint))
		require.NoError(t, err)
		got = append(got, snap)
		input, after = nil, res.Checkpoint
		if !res.More {
			break
		}
	}
	sameCheckpoints(t, want, got)
}

// TestStepsOfManyThreadsShareACache steps 100 threads at once through one
// cache, and two steps of one thread from the same cached checkpoint: the
// race detector watches the values they share.
func TestStepsOfManyThreadsShareACache(t *testing.T) {
	r := cacheGraph(t, 3)
	saver := memory.New()
	want := stepThrough(t, r, saver, nil, "reference")
	cache := graph.NewStateCache(graph.StateCacheConfig{MaxEntries: 50})
	var wg sync.WaitGroup
	got := make([][]graph.Snapshot, 100)
	for i := range got {
		wg.Go(func() { got[i] = stepThrough(t, r, saver, cache, fmt.Sprint("many-", i)) })
	}
	wg.Wait()
	for i := range got {
		sameCheckpoints(t, want, got[i])
	}
	assert.LessOrEqual(t, cache.Stats().Entries, 50)

}

// TestTwoStepsOfAThreadFromOneCachedCheckpoint: one takes it from the
// cache, the other reads it from the saver, both run their node, and
// only one stores its step.
func TestTwoStepsOfAThreadFromOneCachedCheckpoint(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(2)
	g := graph.New("twice", cacheList)
	g.AddNode("n", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if len(cacheList.Get(s)) == 1 {
			arrived.Done()
			arrived.Wait() // both steps run the node before either stores
		}
		return graph.Update(graph.AppendTo(cacheList, fmt.Sprint("n", len(cacheList.Get(s))))), nil
	})
	g.AddEdge(graph.Start, "n")
	g.AddConditionalEdges("n", func(ctx context.Context, s graph.State) (string, error) {
		if len(cacheList.Get(s)) < 3 {
			return "again", nil
		}
		return "end", nil
	}, graph.Branches{"again": "n", "end": graph.End})
	r, err := g.Compile()
	require.NoError(t, err)
	saver := &loadCounter{Saver: memory.New()}
	cache := graph.NewStateCache(graph.StateCacheConfig{})
	ctx := t.Context()
	opts := []graph.Option{graph.WithSaver(saver), graph.Thread("twice")}
	res, err := r.Step(ctx, graph.Input(), append(opts, graph.WithStateCache(cache, ""))...)
	require.NoError(t, err)
	before := saver.gets.Load()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = r.Step(ctx, nil, append(opts, graph.WithStateCache(cache, res.Checkpoint))...) })
	}
	wg.Wait()
	assert.Equal(t, int64(1), saver.gets.Load()-before, "one step took the state from the cache")
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			assert.ErrorIs(t, err, graph.ErrCheckpointConflict)
		}
	}
	assert.Equal(t, 1, ok, "one step is stored: %v", errors.Join(errs...))
	snap, err := r.State(ctx, "twice", graph.WithSaver(saver))
	require.NoError(t, err)
	assert.Equal(t, []string{"n0", "n1"}, cacheList.Get(snap.State))
}

// TestAStateLargerThanAQuarterOfTheCacheIsRead: the cache counts the
// stored size of the values (the deltas of a list included), and a state
// over a quarter of its MaxBytes is read from the saver.
func TestAStateLargerThanAQuarterOfTheCacheIsRead(t *testing.T) {
	g := graph.New("large", cacheList)
	g.AddNode("n", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(cacheList, strings.Repeat("x", 1000))), nil
	})
	g.AddEdge(graph.Start, "n")
	g.AddConditionalEdges("n", func(ctx context.Context, s graph.State) (string, error) {
		if len(cacheList.Get(s)) < 6 {
			return "again", nil
		}
		return "end", nil
	}, graph.Branches{"again": "n", "end": graph.End})
	r, err := g.Compile()
	require.NoError(t, err)
	saver := &loadCounter{Saver: memory.New()}
	cache := graph.NewStateCache(graph.StateCacheConfig{MaxBytes: 14000})
	opts := []graph.Option{graph.WithSaver(saver), graph.Thread("large")}
	res, err := r.Step(t.Context(), graph.Input(), append(opts, graph.WithStateCache(cache, ""))...)
	require.NoError(t, err)
	var reads []int64
	for res.More {
		before := saver.gets.Load()
		res, err = r.Step(t.Context(), nil, append(opts, graph.WithStateCache(cache, res.Checkpoint))...)
		require.NoError(t, err)
		reads = append(reads, saver.gets.Load()-before)
		assert.LessOrEqual(t, cache.Stats().Bytes, int64(3500))
	}
	// The states of 1, 2 and 3 items (1 KB each, and the checkpoint's
	// metadata) fit in 3500 bytes; of 4 and 5 not.
	assert.Equal(t, []int64{0, 0, 0, 1, 1}, reads)
}
