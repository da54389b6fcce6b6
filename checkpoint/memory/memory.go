package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// Saver is an in-memory graph.Saver. The zero value is not usable; call New.
type Saver struct {
	mu      sync.RWMutex
	seq     uint64 // incremented for every stored checkpoint
	threads map[string]*thread
}

// thread holds everything stored for one thread id.
type thread struct {
	created, updated time.Time
	count            int
	lastSeq          uint64
	spaces           map[string]*space
}

// space holds the checkpoints and blobs of one namespace of a thread.
type space struct {
	order []*checkpoint                    // store order, oldest first
	byID  map[string]*checkpoint           // by checkpoint id
	blobs map[string]map[string]graph.Blob // channel -> version -> blob
}

// checkpoint is a stored record with its place in store order and the task
// records of the step that follows it.
type checkpoint struct {
	rec   graph.CheckpointRecord
	pos   int // index in space.order
	tasks map[taskKey][]byte
}

type taskKey struct{ task, kind, key string }

var (
	_ graph.Saver      = (*Saver)(nil)
	_ graph.BlobReader = (*Saver)(nil)
)

// New returns an empty Saver.
func New() *Saver {
	return &Saver{threads: make(map[string]*thread)}
}

// PutCheckpoint implements graph.Saver. It fails, storing nothing, when a
// checkpoint with the same id already exists in the thread and namespace,
// or when the namespace's newest checkpoint is not the one cp expects.
func (s *Saver) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: put checkpoint: %w", err)
	}
	cp.Meta = bytes.Clone(cp.Meta)
	cp.Created = normalizeTime(cp.Created)
	expected := cmp.Or(cp.Head, cp.ParentID)
	cp.Head = ""

	s.mu.Lock()
	defer s.mu.Unlock()
	newest := ""
	if sp := s.space(cp.Thread, cp.NS); sp != nil {
		if sp.byID[cp.ID] != nil {
			return fmt.Errorf("memory: put checkpoint %q of thread %q: already exists", cp.ID, cp.Thread)
		}
		if len(sp.order) > 0 {
			newest = sp.order[len(sp.order)-1].rec.ID
		}
	}
	if newest != expected {
		conflict := &graph.CheckpointConflictError{Thread: cp.Thread, NS: cp.NS, Expected: expected, Newest: newest}
		return fmt.Errorf("memory: put checkpoint %q of thread %q: %w", cp.ID, cp.Thread, conflict)
	}
	th := s.threads[cp.Thread]
	if th == nil {
		th = &thread{created: cp.Created, updated: cp.Created, spaces: make(map[string]*space)}
		s.threads[cp.Thread] = th
	}
	sp := th.spaces[cp.NS]
	if sp == nil {
		sp = &space{byID: make(map[string]*checkpoint), blobs: make(map[string]map[string]graph.Blob)}
		th.spaces[cp.NS] = sp
	}

	c := &checkpoint{rec: cp, pos: len(sp.order)}
	sp.order = append(sp.order, c)
	sp.byID[cp.ID] = c
	for _, b := range blobs {
		sp.putBlob(b)
	}

	s.seq++
	th.count++
	th.lastSeq = s.seq
	if cp.Created.Before(th.created) {
		th.created = cp.Created
	}
	if cp.Created.After(th.updated) {
		th.updated = cp.Created
	}
	return nil
}

// putBlob stores a copy of b unless a blob with its channel and version is
// already stored.
func (sp *space) putBlob(b graph.Blob) {
	versions := sp.blobs[b.Channel]
	if versions == nil {
		versions = make(map[string]graph.Blob)
		sp.blobs[b.Channel] = versions
	}
	if _, ok := versions[b.Version]; ok {
		return
	}
	b.Data = bytes.Clone(b.Data)
	versions[b.Version] = b
}

// GetCheckpoint implements graph.Saver.
func (s *Saver) GetCheckpoint(ctx context.Context, ref graph.CheckpointRef) (graph.CheckpointRecord, error) {
	if err := ctx.Err(); err != nil {
		return graph.CheckpointRecord{}, fmt.Errorf("memory: get checkpoint: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, err := s.find(ref)
	if err != nil {
		return graph.CheckpointRecord{}, err
	}
	return cloneRecord(c.rec), nil
}

// find returns the checkpoint ref names, or the newest of its namespace when
// ref.ID is empty. The caller holds s.mu.
func (s *Saver) find(ref graph.CheckpointRef) (*checkpoint, error) {
	sp := s.space(ref.Thread, ref.NS)
	if sp == nil || len(sp.order) == 0 {
		return nil, fmt.Errorf("memory: thread %q namespace %q: %w", ref.Thread, ref.NS, graph.ErrNotFound)
	}
	if ref.ID == "" {
		return sp.order[len(sp.order)-1], nil
	}
	c := sp.byID[ref.ID]
	if c == nil {
		return nil, fmt.Errorf("memory: checkpoint %q of thread %q namespace %q: %w", ref.ID, ref.Thread, ref.NS, graph.ErrNotFound)
	}
	return c, nil
}

// space returns the namespace ns of thread, or nil. The caller holds s.mu.
func (s *Saver) space(thread, ns string) *space {
	th := s.threads[thread]
	if th == nil {
		return nil
	}
	return th.spaces[ns]
}

// ListCheckpoints implements graph.Saver. A thread without checkpoints in ns
// yields an empty list; opts.Before naming no checkpoint of the thread and
// namespace yields an error wrapping graph.ErrNotFound.
func (s *Saver) ListCheckpoints(ctx context.Context, thread, ns string, opts graph.ListOptions) ([]graph.CheckpointRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: list checkpoints: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sp := s.space(thread, ns)
	end := 0
	if sp != nil {
		end = len(sp.order)
	}
	if opts.Before != "" {
		var before *checkpoint
		if sp != nil {
			before = sp.byID[opts.Before]
		}
		if before == nil {
			return nil, fmt.Errorf("memory: list checkpoints of thread %q namespace %q before %q: %w", thread, ns, opts.Before, graph.ErrNotFound)
		}
		end = before.pos
	}
	n := end
	if opts.Limit > 0 && opts.Limit < n {
		n = opts.Limit
	}
	out := make([]graph.CheckpointRecord, 0, n)
	for i := end - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, cloneRecord(sp.order[i].rec))
	}
	return out, nil
}

// Blobs implements graph.Saver.
func (s *Saver) Blobs(ctx context.Context, thread, ns string, channels []string) ([]graph.Blob, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: blobs: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sp := s.space(thread, ns)
	if sp == nil {
		return nil, nil
	}
	var out []graph.Blob
	for _, ch := range slices.Compact(slices.Sorted(slices.Values(channels))) {
		for _, b := range sp.blobs[ch] {
			b.Data = bytes.Clone(b.Data)
			out = append(out, b)
		}
	}
	return out, nil
}

// BlobsAt implements graph.BlobReader.
func (s *Saver) BlobsAt(ctx context.Context, thread, ns string, versions map[string]string) ([]graph.Blob, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: blobs: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sp := s.space(thread, ns)
	if sp == nil {
		return nil, nil
	}
	var out []graph.Blob
	for ch, v := range versions {
		seen := map[string]bool{}
		for b, ok := sp.blobs[ch][v]; ok && !seen[v]; b, ok = sp.blobs[ch][v] {
			seen[v] = true
			b.Data = bytes.Clone(b.Data)
			out = append(out, b)
			if b.Base == "" {
				break
			}
			v = b.Base
		}
	}
	return out, nil
}

// PutTaskRecords implements graph.Saver. It returns an error wrapping
// graph.ErrNotFound, storing nothing, when the checkpoint does not exist.
func (s *Saver) PutTaskRecords(ctx context.Context, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: put task records: %w", err)
	}
	if len(recs) == 0 {
		return nil
	}
	if ref.ID == "" {
		return fmt.Errorf("memory: put task records of thread %q: empty checkpoint id", ref.Thread)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.find(ref)
	if err != nil {
		return err
	}
	if c.tasks == nil {
		c.tasks = make(map[taskKey][]byte, len(recs))
	}
	for _, r := range recs {
		c.tasks[taskKey{r.TaskID, r.Kind, r.Key}] = bytes.Clone(r.Data)
	}
	return nil
}

// TaskRecords implements graph.Saver. It returns an error wrapping
// graph.ErrNotFound when the checkpoint does not exist.
func (s *Saver) TaskRecords(ctx context.Context, ref graph.CheckpointRef) ([]graph.TaskRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: task records: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, err := s.find(ref)
	if err != nil {
		return nil, err
	}
	out := make([]graph.TaskRecord, 0, len(c.tasks))
	for k, data := range c.tasks {
		out = append(out, graph.TaskRecord{TaskID: k.task, Kind: k.kind, Key: k.key, Data: bytes.Clone(data)})
	}
	slices.SortFunc(out, func(a, b graph.TaskRecord) int {
		return cmp.Or(cmp.Compare(a.TaskID, b.TaskID), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Key, b.Key))
	})
	return out, nil
}

// Threads implements graph.Saver. Threads are ordered by the last time a
// checkpoint was stored in them; Checkpoints counts every namespace; Created
// and Updated are the earliest and latest checkpoint timestamps.
func (s *Saver) Threads(ctx context.Context, opts graph.ThreadListOptions) ([]graph.ThreadInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: threads: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	type entry struct {
		info graph.ThreadInfo
		seq  uint64
	}
	all := make([]entry, 0, len(s.threads))
	for id, th := range s.threads {
		all = append(all, entry{
			info: graph.ThreadInfo{ID: id, Checkpoints: th.count, Created: th.created, Updated: th.updated},
			seq:  th.lastSeq,
		})
	}
	slices.SortFunc(all, func(a, b entry) int { return cmp.Compare(b.seq, a.seq) })
	if opts.Limit > 0 && opts.Limit < len(all) {
		all = all[:opts.Limit]
	}
	out := make([]graph.ThreadInfo, len(all))
	for i, e := range all {
		out[i] = e.info
	}
	return out, nil
}

// DeleteThread implements graph.Saver.
func (s *Saver) DeleteThread(ctx context.Context, thread string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: delete thread: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.threads, thread)
	return nil
}

// cloneRecord returns rec with its own copy of Meta.
func cloneRecord(rec graph.CheckpointRecord) graph.CheckpointRecord {
	rec.Meta = bytes.Clone(rec.Meta)
	return rec
}

// normalizeTime keeps t to the microsecond, in UTC, as the SQL backends do.
func normalizeTime(t time.Time) time.Time {
	return t.Truncate(time.Microsecond).UTC()
}

var _ graph.ThreadSizer = (*Saver)(nil)

// ThreadBytes is the bytes the Saver keeps for the threads whose ids
// start with prefix: the lengths of their checkpoints' ids, parents,
// namespaces and metadata, of their blobs and of their task records.
func (s *Saver) ThreadBytes(ctx context.Context, prefix string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var n int
	for id, th := range s.threads {
		if !strings.HasPrefix(id, prefix) {
			continue
		}
		for ns, sp := range th.spaces {
			for _, c := range sp.order {
				n += len(c.rec.ID) + len(c.rec.ParentID) + len(ns) + len(c.rec.Meta)
				for k, data := range c.tasks {
					n += len(k.task) + len(k.kind) + len(k.key) + len(data)
				}
			}
			for _, versions := range sp.blobs {
				for _, b := range versions {
					n += len(b.Channel) + len(b.Version) + len(b.Base) + len(b.Data)
				}
			}
		}
	}
	return int64(n), nil
}
