package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Durability says when checkpoints reach the saver.
type Durability int

const (
	// DurabilitySync writes each checkpoint before the next step starts:
	// a crash loses at most the step in progress. The default.
	DurabilitySync Durability = iota
	// DurabilityAsync writes checkpoints on a background goroutine, in
	// order, while the next step runs; the run waits for them before it
	// returns. Faster when the saver is slow; a crash may lose the last few
	// steps (they rerun on resume). Journaled calls (Do) are written
	// synchronously in both modes, so side effects are never repeated.
	DurabilityAsync
)

// WithDurability sets when checkpoints are written.
func WithDurability(d Durability) Option { return func(c *config) { c.durability = d } }

// Kinds of TaskRecord the engine writes.
const (
	recResult     = "result"     // a task finished: its command
	recInterrupt  = "interrupt"  // a task is waiting on these interrupts
	recResume     = "resume"     // an answer to one interrupt (Key: its id)
	recJournal    = "journal"    // a journaled call's result (Key: its key)
	recBreakpoint = "breakpoint" // the run paused at a static breakpoint
)

type resultRecord struct {
	Writes []writeRecord `json:"writes,omitempty"`
	// Goto is absent when the task followed its edges, and present (maybe
	// empty) when it routed explicitly.
	Goto    *[]string      `json:"goto,omitempty"`
	Send    []packetRecord `json:"send,omitempty"`
	Handled bool           `json:"handled,omitempty"`
}

// persister keeps one run's checkpoints in a saver.
type persister struct {
	saver  Saver
	thread string
	ns     string
	async  bool

	// cp is the checkpoint the next step follows ("" before the first).
	cp CheckpointRecord
	// head is the namespace's newest checkpoint as this run knows it: cp,
	// or, in a replay or a fork, the newest when the run read the thread.
	// The saver stores a checkpoint only while head is still the newest,
	// so a run that another writer overtook stops (see Saver).
	head string
	// versions maps channels to their versions at cp.
	versions map[string]string

	// The async writer: ops run in order on one goroutine.
	mu      sync.Mutex
	queue   chan asyncOp
	stopped chan struct{}
	err     error
}

// asyncOp is a write for the async writer to run, or, with done set, a
// mark it closes when every write queued before it has run or been
// skipped.
type asyncOp struct {
	write func(context.Context) error
	done  chan struct{}
}

func newPersister(s Saver, thread, ns string, async bool) *persister {
	return &persister{saver: s, thread: thread, ns: ns, async: async, versions: make(map[string]string)}
}

func (p *persister) ref() CheckpointRef {
	return CheckpointRef{Thread: p.thread, NS: p.ns, ID: p.cp.ID}
}

// start begins the async writer; ctx bounds its writes.
func (p *persister) start(ctx context.Context) {
	if !p.async {
		return
	}
	p.queue = make(chan asyncOp, 64)
	p.stopped = make(chan struct{})
	go func() {
		defer close(p.stopped)
		for op := range p.queue {
			if op.done != nil {
				close(op.done)
				continue
			}
			if p.failed() != nil {
				continue // later writes depend on the failed one
			}
			if err := op.write(context.WithoutCancel(ctx)); err != nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
			}
		}
	}()
}

func (p *persister) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// do runs op now (sync mode) or queues it (async mode).
func (p *persister) do(ctx context.Context, op func(context.Context) error) error {
	if !p.async {
		return op(ctx)
	}
	if err := p.failed(); err != nil {
		return err
	}
	p.queue <- asyncOp{write: op}
	return nil
}

// flush waits for every queued write and returns the first error.
func (p *persister) flush() error {
	if !p.async || p.queue == nil {
		return nil
	}
	done := make(chan struct{})
	p.queue <- asyncOp{done: done}
	<-done
	return p.failed()
}

// stop ends the async writer after its queue drains.
func (p *persister) stop() error {
	if !p.async || p.queue == nil {
		return nil
	}
	close(p.queue)
	<-p.stopped
	p.queue = nil
	return p.failed()
}

func (p *persister) putRecords(ctx context.Context, recs ...TaskRecord) error {
	ref := p.ref()
	return p.do(ctx, func(ctx context.Context) error {
		if err := p.saver.PutTaskRecords(ctx, ref, recs); err != nil {
			return fmt.Errorf("graph: thread %q: save task records: %w", p.thread, err)
		}
		return nil
	})
}

// putRecordsNow writes records synchronously, after any queued writes.
func (p *persister) putRecordsNow(ctx context.Context, recs ...TaskRecord) error {
	if err := p.flush(); err != nil {
		return err
	}
	if err := p.saver.PutTaskRecords(ctx, p.ref(), recs); err != nil {
		return fmt.Errorf("graph: thread %q: save task records: %w", p.thread, err)
	}
	return nil
}

// load reads checkpoint id, or the newest when id is empty, which then
// becomes the run's head.
func (p *persister) load(ctx context.Context, id string) (CheckpointRecord, checkpointMeta, error) {
	rec, err := p.saver.GetCheckpoint(ctx, CheckpointRef{Thread: p.thread, NS: p.ns, ID: id})
	if err != nil {
		return rec, checkpointMeta{}, err
	}
	if id == "" {
		p.head = rec.ID
	}
	m, err := decodeMeta(rec)
	return rec, m, err
}

// readHead makes the namespace's newest checkpoint the run's head, for a
// run that continues an older one.
func (p *persister) readHead(ctx context.Context) error {
	rec, err := p.saver.GetCheckpoint(ctx, CheckpointRef{Thread: p.thread, NS: p.ns})
	if err != nil {
		return fmt.Errorf("graph: thread %q: read the newest checkpoint: %w", p.thread, err)
	}
	p.head = rec.ID
	return nil
}

// checkpoint stores checkpoint id after cp, with the given blobs, if head
// is still the newest.
func (p *persister) checkpoint(ctx context.Context, id string, step int, source Source, meta checkpointMeta, blobs []Blob) (CheckpointRecord, error) {
	meta.Format = checkpointFormat
	data, err := json.Marshal(meta)
	if err != nil {
		return CheckpointRecord{}, fmt.Errorf("graph: encode checkpoint: %w", err)
	}
	rec := CheckpointRecord{
		Thread: p.thread, NS: p.ns, ID: id, ParentID: p.cp.ID,
		Step: step, Source: source, Created: time.Now().UTC(), Meta: data,
	}
	if p.head != p.cp.ID {
		rec.Head = p.head
	}
	err = p.do(ctx, func(ctx context.Context) error {
		if err := p.saver.PutCheckpoint(ctx, rec, blobs); err != nil {
			return p.saveError(source, step, err)
		}
		return nil
	})
	if err != nil {
		return CheckpointRecord{}, err
	}
	p.cp, p.head = rec, rec.ID
	return rec, nil
}

// saveError describes a failed PutCheckpoint of the checkpoint that step
// produced. A conflict is the whole story: another writer advanced the
// thread, and this run has stopped without saving anything more.
func (p *persister) saveError(source Source, step int, err error) error {
	var conflict *CheckpointConflictError
	if !errors.As(err, &conflict) {
		return fmt.Errorf("graph: thread %q: save checkpoint after step %d: %w", p.thread, step, err)
	}
	what := fmt.Sprintf("step %d", step)
	switch source {
	case SourceInput:
		what = "the run's input"
	case SourceUpdate, SourceFork:
		what = "the update"
	case SourceReplay:
		what = "the replay's start"
	}
	return fmt.Errorf("graph: %s was not saved: %w", what, conflict)
}

// ErrNotInterrupted: Resume was given for a thread that is not waiting on
// an interrupt.
var ErrNotInterrupted = errors.New("graph: not interrupted")
