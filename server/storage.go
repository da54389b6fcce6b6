package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/trace"
)

// storageLoadTimeout bounds the reading of an owner's stored bytes from
// the databases; storageRefresh is how often an owner at its quota has
// them read again (runs pruned by the operator, drift).
const (
	storageLoadTimeout = 30 * time.Second
	storageRefresh     = 10 * time.Second
)

// storageMeter counts the bytes each owner has the server store, against
// Config.MaxStoredBytes: the checkpoints of its threads (meteredSaver),
// its recorded runs (Config.Recorder's store) and its Platform store
// items (Config.Store). An owner's count starts, at its first use, from
// what the databases hold for it — its checkpoints when the Saver is a
// graph.ThreadSizer, its recorded runs when the Recorder's store is a
// trace.Sizer, its store items — and then follows what the server writes
// and deletes. With a Saver that is no ThreadSizer, checkpoints are
// counted as written by this process only.
type storageMeter struct {
	max      int64             // Config.MaxStoredBytes; negative: no limit
	saver    graph.ThreadSizer // nil when Config.Saver is not one
	recorder trace.Store       // nil without a Recorder
	items    store.Store       // nil without a Store

	mu     sync.Mutex
	owners map[string]*ownerBytes
}

// ownerBytes is what one owner has stored. storageMeter.mu guards the
// counts.
type ownerBytes struct {
	loaded                         chan struct{} // closed when the counts were read
	err                            error         // of the last reading
	unread                         bool          // not read (yet, or the reading failed): the next use reads
	refreshed                      time.Time
	checkpoints, recordings, items int64
}

func (o *ownerBytes) total() int64 { return o.checkpoints + o.recordings + o.items }

// What a count is of.
type storedKind int

const (
	storedCheckpoints storedKind = iota
	storedRecordings
	storedItems
)

func (o *ownerBytes) count(k storedKind) *int64 {
	switch k {
	case storedRecordings:
		return &o.recordings
	case storedItems:
		return &o.items
	}
	return &o.checkpoints
}

func newStorageMeter(max int64, saver graph.Saver, recorder trace.Store, items store.Store) *storageMeter {
	sz, _ := saver.(graph.ThreadSizer)
	return &storageMeter{max: max, saver: sz, recorder: recorder, items: items, owners: make(map[string]*ownerBytes)}
}

// counts is what the databases hold for an owner.
type counts struct {
	checkpoints, recordings, items int64
}

// set makes o's counts c: those read, added to those counted before when
// the database could not tell them.
func (m *storageMeter) set(o *ownerBytes, c counts, replace bool) {
	if m.saver != nil {
		o.checkpoints = c.checkpoints
	}
	if replace {
		o.recordings, o.items = c.recordings, c.items
		return
	}
	o.recordings += c.recordings
	o.items += c.items
}

// owner returns the counts of owner, read from the databases at its first
// use (again after a failed reading).
func (m *storageMeter) owner(ctx context.Context, owner string) (*ownerBytes, error) {
	m.mu.Lock()
	o := m.owners[owner]
	switch {
	case o == nil:
		o = &ownerBytes{loaded: make(chan struct{})}
		m.owners[owner] = o
	case o.unread:
		o.unread, o.err, o.loaded = false, nil, make(chan struct{})
	default:
		loaded := o.loaded
		m.mu.Unlock()
		select {
		case <-loaded:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if o.err != nil {
			return nil, o.err
		}
		return o, nil
	}
	loaded := o.loaded
	m.mu.Unlock()
	c, err := m.read(ctx, owner)
	m.mu.Lock()
	if err != nil {
		o.unread, o.err = true, err
	} else {
		m.set(o, c, false)
		o.refreshed = time.Now()
	}
	m.mu.Unlock()
	close(loaded)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// read reads what the databases hold for owner: its checkpoints, its
// recorded runs and its store items.
func (m *storageMeter) read(ctx context.Context, owner string) (counts, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storageLoadTimeout)
	defer cancel()
	var c counts
	var err error
	if m.saver != nil {
		if c.checkpoints, err = m.saver.ThreadBytes(ctx, threadKey(owner, "")); err != nil {
			return c, fmt.Errorf("server: the bytes of owner %q's threads: %w", owner, err)
		}
	}
	if sz, ok := m.recorder.(trace.Sizer); ok {
		if c.recordings, err = sz.OwnerBytes(ctx, owner); err != nil {
			return c, fmt.Errorf("server: the bytes of owner %q's recorded runs: %w", owner, err)
		}
	}
	if m.items != nil {
		for meta, err := range store.All(ctx, m.items, owner, "") {
			if err != nil {
				return c, fmt.Errorf("server: the bytes of owner %q's store items: %w", owner, err)
			}
			c.items += itemBytes(meta.Path, meta.Size)
		}
	}
	return c, nil
}

// itemBytes is what a store item of path with size bytes of content
// counts.
func itemBytes(path string, size int64) int64 { return int64(len(path)) + size }

// take adds n bytes of kind to owner's count if that keeps it within the
// quota, in one step, and reports whether it did. An owner not yet read
// is read first.
func (m *storageMeter) take(ctx context.Context, owner string, k storedKind, n int64) (bool, error) {
	o, err := m.owner(ctx, owner)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.max >= 0 && o.total()+n > m.max {
		return false, nil
	}
	*o.count(k) += n
	return true, nil
}

// add adds n (negative: takes off) to owner's count of kind, whatever the
// quota: bytes already stored, or deleted.
func (m *storageMeter) add(owner string, k storedKind, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.owners[owner]
	if o == nil || o.unread {
		// Not read yet: the reading will count what is stored, but
		// checkpoints, when it cannot read them, are counted from here.
		if k != storedCheckpoints || m.saver != nil {
			return
		}
		if o == nil {
			o = &ownerBytes{loaded: make(chan struct{}), unread: true}
			close(o.loaded)
			m.owners[owner] = o
		}
	}
	*o.count(k) = max(*o.count(k)+n, 0)
}

// refresh reads owner's stored bytes again, at most once every
// storageRefresh, and returns the owner's counts.
func (m *storageMeter) refresh(ctx context.Context, owner string, o *ownerBytes) *ownerBytes {
	m.mu.Lock()
	if time.Since(o.refreshed) < storageRefresh {
		m.mu.Unlock()
		return o
	}
	o.refreshed = time.Now()
	m.mu.Unlock()
	c, err := m.read(ctx, owner)
	if err != nil {
		return o
	}
	m.mu.Lock()
	m.set(o, c, true)
	m.mu.Unlock()
	return o
}

// reread sets owner's counts of recorded runs (k storedRecordings) or of
// checkpoints (storedCheckpoints) to what the database holds, after some
// were deleted; it reports whether it could.
func (m *storageMeter) reread(ctx context.Context, owner string, k storedKind) bool {
	var n int64
	var err error
	switch sz, ok := m.recorder.(trace.Sizer); {
	case k == storedRecordings && ok:
		n, err = sz.OwnerBytes(ctx, owner)
	case k == storedCheckpoints && m.saver != nil:
		n, err = m.saver.ThreadBytes(ctx, threadKey(owner, ""))
	default:
		return false
	}
	if err != nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if o := m.owners[owner]; o != nil && !o.unread {
		*o.count(k) = n
	}
	return true
}

// storageQuota refuses to store more for an owner at its MaxStoredBytes.
func (s *Server) storageQuota(owner string) *apiError {
	if s.storage.max < 0 {
		return nil
	}
	ctx := context.Background()
	o, err := s.storage.owner(ctx, owner)
	if err != nil {
		s.log.Error("server: storage quota", "owner", owner, "err", err)
		return internalError("")
	}
	s.storage.mu.Lock()
	over := o.total() >= s.storage.max
	s.storage.mu.Unlock()
	if over {
		o = s.storage.refresh(ctx, owner, o)
	}
	s.storage.mu.Lock()
	defer s.storage.mu.Unlock()
	if n := o.total(); n >= s.storage.max {
		return s.storageError(owner, o)
	}
	return nil
}

// storageError is the 429 of an owner at its MaxStoredBytes. The
// storage meter's mu is held.
func (s *Server) storageError(owner string, o *ownerBytes) *apiError {
	return quotaError(QuotaStoredBytes, s.storage.max,
		"owner %q has stored %d bytes (checkpoints %d, recorded runs %d, store items %d), the most allowed: delete threads that are no longer needed (DELETE /v1/threads/{thread}: their recorded runs go with them) or store items, then try again",
		owner, o.total(), o.checkpoints, o.recordings, o.items)
}

// takeStorage takes n bytes of kind from owner's quota, or answers why
// not.
func (s *Server) takeStorage(ctx context.Context, owner string, k storedKind, n int64) *apiError {
	ok, err := s.storage.take(ctx, owner, k, n)
	if err != nil {
		s.log.ErrorContext(ctx, "server: storage quota", "owner", owner, "err", err)
		return internalError(requestID(ctx))
	}
	if ok {
		return nil
	}
	o, err := s.storage.owner(ctx, owner)
	if err != nil {
		return internalError(requestID(ctx))
	}
	s.storage.mu.Lock()
	defer s.storage.mu.Unlock()
	e := s.storageError(owner, o)
	e.Message = fmt.Sprintf("%s (this write needs %d more)", e.Message, n)
	return e
}

// forgetRecordings deletes the recorded runs of the owner's thread, and
// takes them off its stored bytes: a deleted thread's recordings go with
// it.
func (s *Server) forgetRecordings(ctx context.Context, owner, thread string) error {
	if s.cfg.Recorder == nil {
		return nil
	}
	st := s.cfg.Recorder.Store()
	for {
		runs, err := st.Runs(ctx, trace.RunQuery{Owner: owner, Thread: thread, Limit: 100, Brief: true})
		if err != nil {
			return fmt.Errorf("server: the recorded runs of thread %q: %w", thread, err)
		}
		if len(runs) == 0 {
			break
		}
		for _, r := range runs {
			if err := st.DeleteRun(ctx, r.ID); err != nil && !errors.Is(err, trace.ErrNotFound) {
				return fmt.Errorf("server: delete recorded run %q: %w", r.ID, err)
			}
		}
	}
	s.storage.reread(ctx, owner, storedRecordings)
	return nil
}

// limitRecording makes rr, the recording of ru, count in its owner's
// stored bytes, and stop when they reach the quota.
// began says whether this process began the recording (its index entry
// is counted then).
func (s *Server) limitRecording(ru *run, rr *trace.RunRecorder, info trace.RunInfo, began bool) {
	if rr == nil {
		return
	}
	if began {
		s.storage.add(ru.owner, storedRecordings, info.Size())
	}
	ctx := context.WithoutCancel(ru.ctx)
	rr.Limit(func(n int64) bool {
		ok, err := s.storage.take(ctx, ru.owner, storedRecordings, n)
		return ok && err == nil
	})
}

// meteredSaver is the Saver of a Server: it counts the bytes written for
// each owner's threads (checkpoints, their channel values, task records)
// in the storage meter, and takes a thread's off when it is deleted. The
// count is an upper bound of what was added, since the Saver may keep a
// value once for several writes.
type meteredSaver struct {
	graph.Saver
	values *valuesCache // dropThread at each DeleteThread
	meter  *storageMeter

	mu      sync.Mutex
	threads map[string]int64 // by Saver thread key, written by this process
}

func newMeteredSaver(s graph.Saver, values *valuesCache, meter *storageMeter) *meteredSaver {
	return &meteredSaver{Saver: s, values: values, meter: meter, threads: make(map[string]int64)}
}

// PutCheckpoint stores cp and its blobs and counts their bytes.
func (m *meteredSaver) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if err := m.Saver.PutCheckpoint(ctx, cp, blobs); err != nil {
		return err
	}
	n := len(cp.ID) + len(cp.ParentID) + len(cp.NS) + len(cp.Meta)
	for _, b := range blobs {
		n += len(b.Channel) + len(b.Version) + len(b.Base) + len(b.Data)
	}
	m.add(cp.Thread, n)
	return nil
}

// BlobsAt passes graph.BlobReader through (see graph.ReadBlobsAt).
func (m *meteredSaver) BlobsAt(ctx context.Context, thread, ns string, versions map[string]string) ([]graph.Blob, error) {
	return graph.ReadBlobsAt(ctx, m.Saver, thread, ns, versions)
}

// PutTaskRecords stores recs and counts their bytes.
func (m *meteredSaver) PutTaskRecords(ctx context.Context, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	if err := m.Saver.PutTaskRecords(ctx, ref, recs); err != nil {
		return err
	}
	n := 0
	for _, r := range recs {
		n += len(r.TaskID) + len(r.Kind) + len(r.Key) + len(r.Data)
	}
	m.add(ref.Thread, n)
	return nil
}

// DeleteThread deletes the thread, forgets the values cached of it and
// takes its bytes off its owner's.
func (m *meteredSaver) DeleteThread(ctx context.Context, thread string) error {
	err := m.Saver.DeleteThread(ctx, thread)
	m.values.dropThread(thread) // even after an error: part may be gone
	if err != nil {
		return err
	}
	owner, ok := keyOwner(thread)
	if !ok {
		return nil
	}
	m.mu.Lock()
	n := m.threads[thread]
	delete(m.threads, thread)
	m.mu.Unlock()
	if !m.meter.reread(context.WithoutCancel(ctx), owner, storedCheckpoints) {
		m.meter.add(owner, storedCheckpoints, -n)
	}
	return nil
}

func (m *meteredSaver) add(thread string, n int) {
	owner, ok := keyOwner(thread)
	if !ok {
		return
	}
	m.mu.Lock()
	m.threads[thread] += int64(n)
	m.mu.Unlock()
	m.meter.add(owner, storedCheckpoints, int64(n))
}
