package graph

import (
	"container/list"
	"maps"
	"sync"
	"time"
)

// StateCache keeps, in memory, the state of the checkpoints that Step
// stored, so that the next Step of the thread in this process starts from
// it instead of reading it back from the saver (WithStateCache). A
// checkpoint never changes once stored, so its state is the same wherever
// it is read; what a step records for its tasks (results, journal,
// answers) is read from the saver as always.
//
// It holds one checkpoint per thread, the newest this process stored, and
// hands it out once: the Step that takes it owns it, and any other Step of
// the thread (a retry after a failure, another process) reads the saver.
// Values are kept as readers see them (a list's capacity clipped), so a
// step that appends to one never writes where its producer's run does.
// It is safe for concurrent use.
type StateCache struct {
	cfg StateCacheConfig
	now func() time.Time

	mu           sync.Mutex
	byThread     map[string]*list.Element // of *cachedState
	lru          list.List                // newest first
	bytes        int64
	hits, misses int64
}

// StateCacheStats says what a StateCache holds and how well it served.
type StateCacheStats struct {
	// Entries and Bytes are the threads whose state it holds and their
	// size (as MaxBytes counts it).
	Entries int
	Bytes   int64
	// Hits counts the steps that started from its copy of their
	// checkpoint, Misses those that named a checkpoint it did not have.
	Hits, Misses int64
}

// StateCacheConfig bounds a StateCache.
type StateCacheConfig struct {
	// MaxEntries caps the threads whose state is kept (default 1024).
	MaxEntries int
	// MaxBytes caps the size of the values kept, counted as the bytes of
	// their stored encoding (default 64 MiB); a state larger than a
	// quarter of it is not kept.
	MaxBytes int64
	// MaxAge drops a state not taken within it (default one minute): the
	// next step of a run comes at once, or after a pause that the saver
	// serves as well.
	MaxAge time.Duration
}

// Default bounds of a StateCache.
const (
	DefaultStateCacheEntries = 1024
	DefaultStateCacheBytes   = 64 << 20
	DefaultStateCacheAge     = time.Minute
)

// NewStateCache returns an empty cache with cfg's bounds (defaults for
// those that are zero).
func NewStateCache(cfg StateCacheConfig) *StateCache {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultStateCacheEntries
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultStateCacheBytes
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultStateCacheAge
	}
	return &StateCache{cfg: cfg, now: time.Now, byThread: make(map[string]*list.Element)}
}

// WithStateCache makes Step keep the checkpoints it stores in c, and
// start from c's copy of checkpoint after, when c has it, instead of
// reading the thread from the saver. after is the checkpoint the caller
// knows to be the thread's newest (a durable runner's record of where the
// run stands); "" always reads the saver. Should another writer have
// advanced the thread since, the step is not stored: the saver refuses it
// as it refuses any stale writer (ErrCheckpointConflict), and a retry
// without after reads the thread anew. Other runs ignore it.
func WithStateCache(c *StateCache, after string) Option {
	return func(cfg *config) { cfg.stateCache, cfg.after = c, after }
}

// cachedState is a checkpoint's record, its decoded metadata and the
// channel values at it.
type cachedState struct {
	thread string
	r      *Runnable // the graph whose layout the values follow
	rec    CheckpointRecord
	meta   checkpointMeta
	state  *stateData
	sizes  []int
	bytes  int64
	at     time.Time
}

// Stats reports what c holds and how often it served.
func (c *StateCache) Stats() StateCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return StateCacheStats{Entries: c.lru.Len(), Bytes: c.bytes, Hits: c.hits, Misses: c.misses}
}

// take removes and returns thread's state at checkpoint id, of graph r.
func (c *StateCache) take(r *Runnable, thread, id string) (*cachedState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire()
	el, ok := c.byThread[thread]
	if !ok || el.Value.(*cachedState).rec.ID != id || el.Value.(*cachedState).r != r {
		c.misses++
		return nil, false
	}
	c.remove(el)
	c.hits++
	return el.Value.(*cachedState), true
}

// put keeps e as its thread's state, replacing the one kept before.
func (c *StateCache) put(e *cachedState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byThread[e.thread]; ok {
		c.remove(el)
	}
	if e.bytes > c.cfg.MaxBytes/4 {
		return
	}
	e.at = c.now()
	c.byThread[e.thread] = c.lru.PushFront(e)
	c.bytes += e.bytes
	for c.lru.Len() > c.cfg.MaxEntries || c.bytes > c.cfg.MaxBytes {
		c.remove(c.lru.Back())
	}
	c.expire()
}

// expire drops the states kept longer than MaxAge.
func (c *StateCache) expire() {
	limit := c.now().Add(-c.cfg.MaxAge)
	for el := c.lru.Back(); el != nil && el.Value.(*cachedState).at.Before(limit); el = c.lru.Back() {
		c.remove(el)
	}
}

func (c *StateCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*cachedState)
	delete(c.byThread, e.thread)
	c.bytes -= e.bytes
}

// cacheCheckpoint keeps the checkpoint the run just stored, and the
// state at it, for the thread's next Step in this process.
func (ru *run) cacheCheckpoint(rec CheckpointRecord, meta checkpointMeta) {
	st := ru.state.clone()
	for i, v := range st.vals {
		if v != nil {
			st.vals[i] = st.layout.channels[i].view(v) // never appended into by the next step
		}
	}
	meta.Versions = maps.Clone(meta.Versions)
	e := &cachedState{thread: ru.p.thread, r: ru.r, rec: rec, meta: meta, state: st, sizes: append([]int(nil), ru.sizes...)}
	e.bytes = int64(len(rec.Meta))
	for _, n := range e.sizes {
		e.bytes += int64(n)
	}
	ru.stateCache.put(e)
}

// cachedHead takes the state of the checkpoint the run continues from its
// cache, when it is there.
func (ru *run) cachedHead() (*cachedState, bool) {
	if ru.stateCache == nil || ru.cfg.after == "" || ru.cfg.checkpointID != "" || ru.p.ns != "" {
		return nil, false
	}
	return ru.stateCache.take(ru.r, ru.p.thread, ru.cfg.after)
}
