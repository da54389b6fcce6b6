package sqlite

import (
	"context"
	"slices"
	"sync"

	"github.com/coorflow/coorflow/graph"
)

// Group commit. A commit costs about the same whether it holds one
// checkpoint or many: each page it changed is written to the WAL once, and
// the checkpoints of one moment share their pages (the table's last leaf,
// the blobs' last leaf). So PutCheckpoint calls that wait for the writer
// together are stored together: each queues its checkpoint, and the first
// to get the writer stores every queued one in one transaction and tells
// the others, which return without taking the writer. Each returns after
// the commit that holds its checkpoint, so a call that returned nil is as
// durable as with a transaction of its own.
//
// When one checkpoint of a group fails (a conflict, an id stored twice),
// the group is rolled back and each of its checkpoints stored alone, so
// that only that one fails and its error is its own.

// putRequest is one queued PutCheckpoint.
type putRequest struct {
	ctx    context.Context
	cp     graph.CheckpointRecord
	inline any           // the blobs of cp's row (splitBlobs)
	blobs  []graph.Blob  // the others
	err    error         // set before done is closed
	done   chan struct{} // closed when the request was stored or failed
}

// putQueue holds the requests waiting for the writer.
type putQueue struct {
	mu      sync.Mutex
	pending []*putRequest
}

func (q *putQueue) add(r *putRequest) {
	q.mu.Lock()
	q.pending = append(q.pending, r)
	q.mu.Unlock()
}

// take removes and returns every pending request.
func (q *putQueue) take() []*putRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.pending
	q.pending = nil
	return out
}

// remove removes r if it is still pending, and reports whether it was: if
// not, a writer has taken it and will close its done.
func (q *putQueue) remove(r *putRequest) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.pending, r)
	if i < 0 {
		return false
	}
	q.pending = slices.Delete(q.pending, i, i+1)
	return true
}

// put stores cp and its blobs, in a group with the checkpoints that wait
// for the writer at the same time. ctx is honoured until the write starts.
func (s *Saver) put(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &putRequest{ctx: ctx, cp: cp, done: make(chan struct{})}
	r.inline, r.blobs = splitBlobs(cp, blobs)
	s.puts.add(r)
	_, writer, err := s.share.LockOr(ctx, r.done)
	if err != nil && s.puts.remove(r) {
		return err // no writer took it: nothing was stored
	}
	if writer {
		s.putGroup(s.puts.take())
		s.share.Unlock()
	}
	<-r.done
	return r.err
}

// putGroup stores the requests of group, holding the writer, and closes
// each one's done. Requests whose context ended are not stored.
func (s *Saver) putGroup(group []*putRequest) {
	if len(group) == 1 { // alone: the common case of one run
		r := group[0]
		if r.err = r.ctx.Err(); r.err == nil {
			r.err = s.putAlone(r)
		}
		close(r.done)
		return
	}
	live := make([]*putRequest, 0, len(group))
	for _, r := range group {
		if r.err = r.ctx.Err(); r.err == nil {
			live = append(live, r)
		}
	}
	wctx := context.Background() // see withWriter
	if len(live) > 1 {
		err := inTx(wctx, wctx, &s.w, func(ctx context.Context, w *writeStatements) error {
			for _, r := range live {
				if err := insertCheckpoint(ctx, w, r.cp, r.inline, r.blobs); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			live = nil
		}
	}
	for _, r := range live {
		r.err = s.putAlone(r)
	}
	for _, r := range group {
		close(r.done)
	}
}

// putAlone stores r in a transaction of its own (one statement needs
// none), holding the writer.
func (s *Saver) putAlone(r *putRequest) error {
	wctx := context.WithoutCancel(r.ctx)
	insert := func(ctx context.Context, w *writeStatements) error {
		return insertCheckpoint(ctx, w, r.cp, r.inline, r.blobs)
	}
	if len(r.blobs) == 0 {
		return insert(wctx, &s.w) // one statement, blobs in its row: atomic as it is
	}
	return inTx(r.ctx, wctx, &s.w, insert)
}
