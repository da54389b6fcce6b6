package temporalrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// EventsDropped is the payload of the custom event a stream yields at its
// end when the event log dropped events of the run over its bounds
// (EventLogConfig): the run itself lost nothing.
type EventsDropped struct {
	Events int64 `json:"events"`
}

// EventName names the event: "events_dropped".
func (EventsDropped) EventName() string { return "events_dropped" }

// Stream runs the graph on Temporal as Invoke does and yields its events
// as graph.Runnable.Stream does: the same kinds and payloads, selected by
// the same options (graph.Events, CustomEvents, SkipCustomEvents), with
// the tokens and custom events of nodes as they are emitted. The events
// travel outside Temporal's history: the workers store them in the event
// log (Config.Events) as each step runs, and Stream reads them from there.
//
// The events of each task keep their order; a step whose tasks run as
// activities of their own yields its tasks' events before its
// step_start. A step retried after its worker died yields the events of
// the retry after those its first attempt stored (a journaled call is
// replayed, not made again: a model_call event says Replayed); events
// of the superseded attempt that come after the retry's are dropped. A
// failure is yielded last, as an EventError event with the error. When
// no event said which checkpoint the run ended at (the log dropped it, or
// the worker died after storing its step), a checkpoint event says it
// before the end.
// Breaking out of the loop, or cancelling ctx, cancels the run's
// workflow; Stream returns once it has stopped.
func (r *Runner) Stream(ctx context.Context, input []graph.Write, opts ...graph.Option) iter.Seq2[graph.Event, error] {
	return func(yield func(graph.Event, error) bool) {
		s := &stream{r: r, yield: yield, attempts: make(map[string]int32)}
		if err := s.run(ctx, input, opts); err != nil && !s.stopped {
			yield(graph.Event{Kind: graph.EventError, Path: r.cfg.Graph.Name(), Err: err, Time: time.Now()}, err)
		}
	}
}

// stream is one call of Stream.
type stream struct {
	r       *Runner
	yield   func(graph.Event, error) bool
	spec    graph.RunSpec
	after   int64 // the last frame read
	stopped bool  // the consumer broke out of the loop
	// attempts is the newest attempt seen of each activity retried (a
	// first attempt is not kept: a run may have a great many steps).
	attempts map[string]int32
	// checkpoint is the last checkpoint of the root graph an event said
	// was stored: end says the run's own when the log dropped it.
	checkpoint string
}

// outcome is where the workflow left the run.
type outcome struct {
	out Output
	err error
}

func (s *stream) run(ctx context.Context, input []graph.Write, opts []graph.Option) error {
	r := s.r
	spec, err := r.spec(input, opts)
	if err != nil {
		return err
	}
	s.spec = spec
	log := r.cfg.Events
	if log == nil {
		return errors.New("temporalrun: Stream needs Config.Events: the event log the workers store the run's events in")
	}
	if s.after, err = log.begin(ctx, spec.Thread); err != nil {
		return err
	}
	var events *graph.EventSpec
	if spec.Events.Streams() {
		events = &spec.Events
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan outcome, 1)
	go func() {
		out, err := r.run(rctx, spec, input, events)
		done <- outcome{out, err}
	}()
	if !s.emit(graph.Event{Kind: graph.EventRunStart, Path: r.cfg.Graph.Name(), Time: time.Now()}) {
		return s.stop(ctx, cancel, done)
	}
	o, err := s.follow(ctx, done)
	switch {
	case s.stopped:
		return s.stop(ctx, cancel, done)
	case err != nil:
		cancel()
		<-done
		if ctx.Err() != nil {
			return r.cancel(ctx, spec.Thread)
		}
		return errors.Join(err, r.Cancel(context.WithoutCancel(ctx), spec.Thread))
	case o.err != nil && ctx.Err() != nil:
		return r.cancel(ctx, spec.Thread)
	case o.err != nil:
		return decodeError(o.err)
	}
	return s.end(ctx, o.out)
}

// follow yields the run's events from the log until the workflow has
// left the run and every event stored before is read.
func (s *stream) follow(ctx context.Context, done <-chan outcome) (outcome, error) {
	log, thread := s.r.cfg.Events, s.spec.Thread
	var o *outcome
	for {
		changed := log.changed(thread)
		frames, err := log.read(ctx, thread, s.after)
		if err != nil {
			return outcome{}, err
		}
		for _, f := range frames {
			s.after = f.ID
			if !s.frame(f.Data) {
				return outcome{}, nil
			}
		}
		if len(frames) > 0 {
			if err := log.consume(ctx, thread, s.after); err != nil {
				return outcome{}, err
			}
			continue
		}
		if o != nil {
			return *o, nil
		}
		select {
		case <-changed:
		case got := <-done:
			// Every step stored its events before it ended: one more
			// read takes the last of them.
			o = &got
		case <-ctx.Done():
			got := <-done
			return got, nil
		}
	}
}

// frame yields the event of a stored frame, unless a retry of its
// activity superseded it; it reports false when the consumer stopped.
func (s *stream) frame(data []byte) bool {
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		return true // not ours to fail the run over
	}
	if f.Attempt < s.attempts[f.Source] {
		return true
	}
	if f.Attempt > 1 {
		s.attempts[f.Source] = f.Attempt
	}
	ev, err := s.r.cfg.Graph.DecodeEvent(f.Event, s.r.cfg.Payloads)
	if err != nil {
		// A worker with another version of the graph: the event without
		// what this one cannot read.
		f.Event.Writes, f.Event.State, f.Event.Data = nil, nil, nil
		ev, _ = s.r.cfg.Graph.DecodeEvent(f.Event, nil)
	}
	if f.Err != nil {
		ev.Err = f.Err.rebuild()
	}
	return s.emit(ev)
}

// emit yields ev if the stream takes it.
func (s *stream) emit(ev graph.Event) bool {
	if ev.Kind == graph.EventCheckpoint && ev.Path == s.r.cfg.Graph.Name() {
		s.checkpoint, _ = ev.Data.(string)
	}
	if !s.spec.Events.Takes(ev.Kind, ev.Name()) {
		return true
	}
	if !s.yield(ev, nil) {
		s.stopped = true
	}
	return !s.stopped
}

// end yields how the run ended: the dropped events if any, the run's
// last checkpoint if no event said it was stored (the log dropped it, or
// the step's worker died after storing it), its interrupts, its end with
// its state read from the saver. A consumer that keeps the last
// checkpoint it was told of (the server does) has the run's own.
func (s *stream) end(ctx context.Context, out Output) error {
	r := s.r
	name := r.cfg.Graph.Name()
	if n, err := r.cfg.Events.dropped(ctx, s.spec.Thread); err == nil && n > 0 && s.spec.Events.Takes(graph.EventCustom, EventsDropped{}.EventName()) {
		if !s.emit(graph.Event{Kind: graph.EventCustom, Path: name, Data: EventsDropped{Events: n}, Time: time.Now()}) {
			return nil
		}
	}
	if out.Checkpoint != "" && out.Checkpoint != s.checkpoint {
		if !s.emit(graph.Event{Kind: graph.EventCheckpoint, Path: name, Step: out.Step, Data: out.Checkpoint, Time: time.Now()}) {
			return nil
		}
	}
	res, err := r.result(ctx, out)
	if err != nil {
		return err
	}
	if res.Status == graph.StatusInterrupted {
		if !s.emit(graph.Event{Kind: graph.EventInterrupt, Path: name, State: res.State, Data: res.Interrupts, Time: time.Now()}) {
			return nil
		}
	}
	s.emit(graph.Event{Kind: graph.EventRunEnd, Path: name, State: res.State, Data: res.Status, Time: time.Now()})
	return nil
}

// stop ends a run whose consumer broke out of the loop: it cancels the
// workflow, as breaking out of graph.Runnable.Stream cancels the run.
func (s *stream) stop(ctx context.Context, cancel context.CancelFunc, done <-chan outcome) error {
	cancel()
	<-done
	if err := s.r.Cancel(context.WithoutCancel(ctx), s.spec.Thread); err != nil {
		return fmt.Errorf("temporalrun: stop the run of thread %q: %w", s.spec.Thread, err)
	}
	return nil
}
