package temporalrun

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/coorflow/coorflow/graph"
)

// frame is one event as the event log stores it: the event, and the
// activity attempt that emitted it, by which the reader drops the events
// of an attempt a retry superseded.
type frame struct {
	// Source is the activity (workflow run id / activity id); Attempt
	// its attempt.
	Source  string            `json:"src"`
	Attempt int32             `json:"att"`
	Event   graph.EventRecord `json:"ev"`
	// Err is the event's error with its details (a node's failure).
	Err *errorInfo `json:"err,omitempty"`
	// Cut says why the event travels without its payload (or with its
	// error shortened).
	Cut string `json:"cut,omitempty"`
}

// maxBuffered bounds what a step holds before its events are stored: a
// node that emits faster than the log stores waits.
const maxBuffered = 4 << 20

// streamWriter stores the events of one activity in the event log as they
// come, in batches: what was emitted while the previous batch was being
// stored goes in the next.
type streamWriter struct {
	log     *EventLog
	r       *graph.Runnable
	thread  string
	source  string
	attempt int32
	logger  interface{ Warn(string, ...any) }
	ctx     context.Context
	mu      sync.Mutex
	buf     [][]byte
	size    int
	closed  bool
	kick    chan struct{} // a batch is waiting
	room    chan struct{} // closed when the buffer was emptied
	done    chan struct{} // the flusher has ended
}

// stream returns the writer of the events of the activity of ctx, or nil
// when the run streams nothing.
func (g *Graphs) stream(ctx context.Context, r *graph.Runnable, thread string, spec *graph.EventSpec) *streamWriter {
	if g.events == nil || spec == nil || !spec.Streams() {
		return nil
	}
	info := activity.GetInfo(ctx)
	source := info.WorkflowExecution.RunID + "/" + info.ActivityID
	if info.IsLocalActivity {
		source = info.WorkflowExecution.RunID + "/local-" + info.ActivityID // numbered apart
	}
	w := &streamWriter{log: g.events, r: r, thread: thread, attempt: info.Attempt,
		source: source, logger: activity.GetLogger(ctx),
		// The events of a cancelled step are stored too, up to its end.
		ctx:  context.WithoutCancel(ctx),
		kick: make(chan struct{}, 1), room: make(chan struct{}), done: make(chan struct{})}
	go w.flush()
	return w
}

// options are the run options that send the step's events to w.
func (w *streamWriter) options(spec *graph.EventSpec) []graph.Option {
	if w == nil {
		return nil
	}
	return []graph.Option{graph.WithEvents(*spec), graph.StreamTo(w.yield)}
}

// yield encodes ev and queues it; it waits while the buffer is full. The
// run's own start, end and interrupt are the caller's to say (it knows
// them from the workflow), not the step's.
func (w *streamWriter) yield(ev graph.Event) bool {
	if ev.Path == w.r.Name() && (ev.Kind == graph.EventRunStart || ev.Kind == graph.EventRunEnd || ev.Kind == graph.EventInterrupt) {
		return true
	}
	data := w.encode(ev)
	w.mu.Lock()
	for w.size >= maxBuffered && !w.closed {
		room := w.room
		w.mu.Unlock()
		<-room
		w.mu.Lock()
	}
	w.buf = append(w.buf, data)
	w.size += len(data)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return true
}

// encode renders ev as a frame; one too large, or whose payload does not
// encode, travels without its payload (its error shortened if that is
// still too large) and says why.
func (w *streamWriter) encode(ev graph.Event) []byte {
	f := frame{Source: w.source, Attempt: w.attempt}
	rec, err := w.r.EncodeEvent(ev)
	if ev.Err != nil {
		f.Err = describe(ev.Err)
	}
	if err != nil {
		f.Cut = err.Error()
	}
	f.Event = rec
	data, err := json.Marshal(f)
	if err == nil && len(data) <= w.log.cfg.MaxFrameBytes {
		return data
	}
	if err == nil {
		f.Cut = "temporalrun: the event's payload is larger than the event log takes (EventLogConfig.MaxFrameBytes)"
	}
	f.Event.Writes, f.Event.State, f.Event.Data = nil, nil, nil
	data, _ = json.Marshal(f) // what is left always encodes
	// An error can be as large (model output quoted in it): its messages
	// are shortened until the event fits.
	for n := w.log.cfg.MaxFrameBytes / 4; len(data) > w.log.cfg.MaxFrameBytes && n > 0; n /= 2 {
		f.Cut = "temporalrun: the event's error is larger than the event log takes (EventLogConfig.MaxFrameBytes): its messages are shortened"
		f.Event.Err = shorten(f.Event.Err, n)
		f.Err.shorten(n)
		data, _ = json.Marshal(f)
	}
	return data
}

// shorten cuts s to at most n bytes, on a character boundary.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// flush stores batches until close.
func (w *streamWriter) flush() {
	defer close(w.done)
	for {
		<-w.kick
		w.mu.Lock()
		batch, closed := w.buf, w.closed
		w.buf, w.size = nil, 0
		close(w.room)
		w.room = make(chan struct{})
		w.mu.Unlock()
		if len(batch) > 0 {
			w.store(batch)
		}
		if closed {
			return
		}
	}
}

// store appends a batch, trying a failed append again a few times: the
// step goes on either way, its events are not worth failing it.
func (w *streamWriter) store(batch [][]byte) {
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
		dropped, err := w.log.append(ctx, w.thread, batch)
		cancel()
		switch {
		case err == nil && dropped > 0:
			w.logger.Warn("temporalrun: events dropped over the event log's bounds", "thread", w.thread, "dropped", dropped)
			return
		case err == nil:
			return
		case try == 2:
			w.logger.Warn("temporalrun: events lost", "thread", w.thread, "events", len(batch), "err", err)
			return
		}
	}
}

// close stores what is left and waits until it is stored.
func (w *streamWriter) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	<-w.done
}
