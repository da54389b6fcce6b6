package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// Defaults of the RecorderConfig fields left zero.
const (
	DefaultQueue        = 4096
	DefaultBatch        = 256
	DefaultWriteTimeout = 30 * time.Second
)

// RecorderConfig configures a Recorder.
type RecorderConfig struct {
	// Skip names the events not recorded (graph.Event.Name: "values",
	// "token", …); every other event is. Skipped events still count in
	// the sequence numbers.
	Skip []string
	// Queue is how many events may wait to be written (default 4096); a
	// run whose events come faster than the store takes them waits.
	Queue int
	// Batch caps the events written in one AppendEvents (default 256).
	Batch int
	// WriteTimeout bounds each write to the store (default 30s).
	WriteTimeout time.Duration
	// Logger receives write failures (default slog.Default()).
	Logger *slog.Logger
}

// Recorder records runs into a Store: each run's index entry, its events,
// the context snapshots of its model calls and the calls' requests and
// responses. Events are encoded when they are observed and written in
// batches by one goroutine of the Recorder, so observing an event costs
// the run its encoding, not a database round trip. Create it with
// NewRecorder and stop it with Close; it is safe for concurrent use.
type Recorder struct {
	store Store
	cfg   RecorderConfig
	log   *slog.Logger

	queue     chan item
	closing   chan struct{}
	closeOnce sync.Once
	done      chan struct{} // closed when the writer has ended
}

// item is an event to write or, when flush is set, a marker closed once
// everything queued before it is written.
type item struct {
	ev    Event
	run   *RunRecorder
	flush chan struct{}
}

// NewRecorder returns a Recorder writing to store, and starts its writer.
func NewRecorder(store Store, cfg RecorderConfig) *Recorder {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	r := &Recorder{
		store: store, cfg: cfg, log: cfg.Logger,
		queue: make(chan item, cfg.Queue), closing: make(chan struct{}), done: make(chan struct{}),
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	go r.write()
	return r
}

// Store returns the store the Recorder writes to, for reading runs back.
func (r *Recorder) Store() Store { return r.store }

// Close stops taking events, writes those already queued and waits for the
// writer to end, or for ctx. Runs observed after Close are not recorded
// (their Finish returns ErrClosed). It does not close the Store.
func (r *Recorder) Close(ctx context.Context) error {
	r.closeOnce.Do(func() { close(r.closing) })
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("trace: close: events still being written: %w", ctx.Err())
	}
}

// Begin adds run to the index and returns the recorder of its events.
// Zero fields get defaults: Status running, StartedAt now, Start input
// when there is an Input (continue otherwise).
func (r *Recorder) Begin(ctx context.Context, run RunInfo) (*RunRecorder, error) {
	if run.ID == "" {
		return nil, errors.New("trace: begin: the run has no id")
	}
	select {
	case <-r.closing:
		return nil, fmt.Errorf("trace: begin run %q: %w", run.ID, ErrClosed)
	default:
	}
	if run.Status == "" {
		run.Status = StatusRunning
	}
	if run.StartedAt.IsZero() {
		run.StartedAt = time.Now()
	}
	run.StartedAt = run.StartedAt.UTC()
	if run.Start == "" {
		run.Start = StartContinue
		if run.Input != nil {
			run.Start = StartInput
		}
	}
	if err := r.store.CreateRun(ctx, run); err != nil {
		return nil, fmt.Errorf("trace: begin run %q: %w", run.ID, err)
	}
	return &RunRecorder{r: r, info: run}, nil
}

// Continue returns the recorder of run, which is in the index already,
// for its events after sequence number after: a run that another process
// began and this one took over (server replicas). Events with a sequence
// number already stored are ignored.
func (r *Recorder) Continue(run RunInfo, after int64) (*RunRecorder, error) {
	select {
	case <-r.closing:
		return nil, fmt.Errorf("trace: continue run %q: %w", run.ID, ErrClosed)
	default:
	}
	return &RunRecorder{r: r, info: run, seq: after}, nil
}

// Record runs events (a graph.Runnable's Stream) and records them as run,
// passing every event on. A failure to record is yielded last, as an
// EventError with the error; the run itself is not stopped by it.
//
//	for ev, err := range rec.Record(ctx, trace.RunInfo{ID: id, Graph: wf.Name(), Input: in},
//		wf.Stream(ctx, input)) { ... }
func (r *Recorder) Record(ctx context.Context, run RunInfo, events iter.Seq2[graph.Event, error]) iter.Seq2[graph.Event, error] {
	return func(yield func(graph.Event, error) bool) {
		rr, err := r.Begin(ctx, run)
		if err != nil {
			yield(graph.Event{Kind: graph.EventError, Path: run.Graph, Err: err, Time: time.Now()}, err)
			return
		}
		var runErr error
		stopped := false
		for ev, err := range events {
			rr.Observe(ev)
			if err != nil {
				runErr = err
			}
			if !yield(ev, err) {
				stopped = true
				runErr = fmt.Errorf("trace: the stream's consumer stopped: %w", context.Canceled)
				break
			}
		}
		if err := rr.Finish(context.WithoutCancel(ctx), runErr); err != nil && !stopped {
			yield(graph.Event{Kind: graph.EventError, Path: run.Graph, Err: err, Time: time.Now()}, err)
		}
	}
}

// enqueue hands an item to the writer.
func (r *Recorder) enqueue(ctx context.Context, it item) error {
	select {
	case <-r.closing:
		return ErrClosed
	default:
	}
	select {
	case r.queue <- it:
		return nil
	case <-r.closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// write is the writer goroutine: it writes queued events in batches until
// the Recorder closes, then writes what is left.
func (r *Recorder) write() {
	defer close(r.done)
	var b batch
	for {
		select {
		case it := <-r.queue:
			b.add(it)
		case <-r.closing:
			for {
				select {
				case it := <-r.queue:
					b.add(it)
					if len(b.events) >= r.cfg.Batch {
						r.writeBatch(&b)
					}
				default:
					r.writeBatch(&b)
					return
				}
			}
		}
	gather:
		for len(b.events) < r.cfg.Batch {
			select {
			case it := <-r.queue:
				b.add(it)
			default:
				break gather
			}
		}
		r.writeBatch(&b)
	}
}

// batch is what the writer has taken from the queue and not yet written.
type batch struct {
	events  []Event
	runs    []*RunRecorder // runs[i] recorded events[i]
	flushes []chan struct{}
}

func (b *batch) add(it item) {
	if it.flush != nil {
		b.flushes = append(b.flushes, it.flush)
		return
	}
	b.events = append(b.events, it.ev)
	b.runs = append(b.runs, it.run)
}

// writeBatch writes b's events, then releases its flush markers. When the
// batch fails, each run's events are tried on their own, so one run's
// failure does not lose the others' events.
func (r *Recorder) writeBatch(b *batch) {
	if len(b.events) > 0 {
		if err := r.append(b.events); err != nil {
			byRun := map[*RunRecorder][]Event{}
			var order []*RunRecorder
			for i, rr := range b.runs {
				if _, ok := byRun[rr]; !ok {
					order = append(order, rr)
				}
				byRun[rr] = append(byRun[rr], b.events[i])
			}
			for _, rr := range order {
				if err := r.append(byRun[rr]); err != nil {
					rr.fail(err)
					r.log.Error("trace: recording events failed", "run", rr.info.ID, "events", len(byRun[rr]), "err", err)
				}
			}
		}
	}
	for _, f := range b.flushes {
		close(f)
	}
	clear(b.events)
	clear(b.runs)
	b.events, b.runs, b.flushes = b.events[:0], b.runs[:0], b.flushes[:0]
}

func (r *Recorder) append(events []Event) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.WriteTimeout)
	defer cancel()
	return r.store.AppendEvents(ctx, events)
}

// RunRecorder records the events of one run. Call Observe with every
// event of the run, in order, from one goroutine at a time, then Finish.
// A nil RunRecorder records nothing.
type RunRecorder struct {
	r    *Recorder
	info RunInfo

	mu       sync.Mutex
	seq      int64
	root     string // the root run's path
	status   string // from the root run's run_end
	final    json.RawMessage
	finished bool
	allow    func(bytes int64) bool // Limit's; nil: no limit
	limited  bool                   // allow refused: nothing more is recorded

	errMu sync.Mutex
	err   error // the first failure to record
}

// ID returns the run's id.
func (rr *RunRecorder) ID() string {
	if rr == nil {
		return ""
	}
	return rr.info.ID
}

// Observe records ev. It encodes ev at once and queues it for writing;
// it waits only while the Recorder's queue is full.
func (rr *RunRecorder) Observe(ev graph.Event) {
	if rr == nil {
		return
	}
	rr.mu.Lock()
	if rr.finished {
		rr.mu.Unlock()
		return
	}
	rr.seq++
	switch {
	case ev.Kind == graph.EventRunStart && rr.root == "":
		rr.root = ev.Path
	case ev.Kind == graph.EventRunEnd && ev.Path == rr.root:
		if st, ok := ev.Data.(graph.Status); ok {
			rr.status = string(st)
		}
		if raw, err := json.Marshal(ev.State); err == nil {
			rr.final = raw
		} else {
			rr.fail(fmt.Errorf("trace: encode the final state: %w", err))
		}
	}
	seq, allow, limited := rr.seq, rr.allow, rr.limited
	rr.mu.Unlock()
	if limited || slices.Contains(rr.r.cfg.Skip, ev.Name()) {
		return
	}
	enc := encodeEvent(rr.info.ID, seq, ev)
	if allow != nil && !allow(enc.Size()) {
		enc = rr.limit(seq)
	}
	// Not under mu: a full queue must not hold up Finish.
	if err := rr.r.enqueue(context.Background(), item{ev: enc, run: rr}); err != nil {
		rr.fail(err)
	}
}

// KindTruncated is the kind of the event a RunRecorder records, in place
// of the one its limit refused, when it stops recording a run's events
// (RunRecorder.Limit).
const KindTruncated = "recording_truncated"

// ErrLimit is wrapped by the error of Finish when the run's limit stopped
// its recording (RunRecorder.Limit).
var ErrLimit = errors.New("trace: the recording reached its limit")

// Limit makes rr ask allow, with an event's Size, before it records the
// event, and with the final state's length before it records that. Once
// allow refuses an event, rr records one event of kind KindTruncated in
// its place and no more of the run's events, and a refused final state is
// left out; the run's index entry stays and Finish returns an error
// wrapping ErrLimit. Call it before the first Observe.
func (rr *RunRecorder) Limit(allow func(bytes int64) bool) {
	if rr == nil {
		return
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.allow = allow
}

// limit stops the recording of rr's events and returns the event that
// says so, numbered seq.
func (rr *RunRecorder) limit(seq int64) Event {
	rr.mu.Lock()
	rr.limited = true
	rr.mu.Unlock()
	err := fmt.Errorf("trace: run %q: its events from %d on are not recorded: %w", rr.info.ID, seq, ErrLimit)
	rr.fail(err)
	return Event{RunID: rr.info.ID, Seq: seq, Kind: KindTruncated, Time: time.Now().UTC(), Error: err.Error()}
}

// Finish waits until the run's events are written and records how the run
// ended: runErr nil means it finished (done or interrupted, as its last
// event says), a cancelled context means cancelled, any other error
// failed. It returns the first failure to record the run, if any. Calls
// after the first do nothing.
func (rr *RunRecorder) Finish(ctx context.Context, runErr error) error {
	if rr == nil {
		return nil
	}
	rr.mu.Lock()
	if rr.finished {
		rr.mu.Unlock()
		return nil
	}
	rr.finished = true
	info := rr.info
	info.Events, info.FinalState = rr.seq, rr.final
	allow := rr.allow
	switch {
	case runErr == nil && rr.status != "":
		info.Status = rr.status
	case runErr == nil:
		info.Status = StatusDone
	case errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded):
		info.Status, info.Error = StatusCancelled, runErr.Error()
	default:
		info.Status, info.Error = StatusError, runErr.Error()
	}
	rr.mu.Unlock()
	if allow != nil && len(info.FinalState) > 0 && !allow(int64(len(info.FinalState))) {
		info.FinalState = nil
		rr.fail(fmt.Errorf("trace: run %q: its final state is not recorded: %w", info.ID, ErrLimit))
	}

	if err := rr.r.flush(ctx); err != nil {
		return rr.failed(fmt.Errorf("trace: finish run %q: %w", info.ID, err))
	}
	now := time.Now().UTC()
	info.EndedAt = &now
	if err := rr.r.store.FinishRun(ctx, info); err != nil {
		rr.fail(fmt.Errorf("trace: finish run %q: %w", info.ID, err))
	}
	return rr.failed(nil)
}

// Flush waits until the events rr observed so far are written (or failed
// to be: Finish returns that failure). A server replica flushes a run's
// recording before each of its checkpoints, so that the replica that takes
// the run over from a checkpoint, if this process dies, continues a
// recording that lacks none of the events before it.
func (rr *RunRecorder) Flush(ctx context.Context) error {
	if rr == nil {
		return nil
	}
	if err := rr.r.flush(ctx); err != nil {
		return fmt.Errorf("trace: flush run %q: %w", rr.info.ID, err)
	}
	return nil
}

// flush waits until the events queued so far are written.
func (r *Recorder) flush(ctx context.Context) error {
	flush := make(chan struct{})
	if err := r.enqueue(ctx, item{flush: flush}); err != nil {
		return err
	}
	select {
	case <-flush:
		return nil
	case <-r.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fail records err unless an earlier failure was recorded.
func (rr *RunRecorder) fail(err error) {
	rr.errMu.Lock()
	defer rr.errMu.Unlock()
	if rr.err == nil {
		rr.err = err
	}
}

// failed records err (if not nil) and returns the first failure.
func (rr *RunRecorder) failed(err error) error {
	if err != nil {
		rr.fail(err)
	}
	rr.errMu.Lock()
	defer rr.errMu.Unlock()
	return rr.err
}
