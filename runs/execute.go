package runs

import (
	"context"
	"fmt"
	"iter"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/trace"
)

// Executor executes the runs of a workflow and yields their events, as
// graph.Runnable.Stream does: a *graph.Runnable is the executor of its
// runs in this process; temporalrun's Runner executes them on Temporal's
// workers (wrapped with Remote).
type Executor interface {
	Stream(ctx context.Context, input []graph.Write, opts ...graph.Option) iter.Seq2[graph.Event, error]
}

// Remote marks x as an executor whose model calls are made elsewhere (a
// Temporal worker's): the meters of this process do not see them, so
// Execute counts the llm.ModelCall events x yields in the run's meter, as
// the calls themselves would have been counted had they been made here.
// An executor that makes its calls under the meter of the context it is
// given (in this process) is not Remote: its calls would count twice.
func Remote(x Executor) Executor { return remote{x} }

// remote is an Executor marked by Remote.
type remote struct{ Executor }

// IsRemote reports whether x was marked by Remote.
func IsRemote(x Executor) bool {
	_, ok := x.(remote)
	return ok
}

// Execution says how Execute executes a run: on which executor, with
// which options, meter and recorder, and who sees its events.
type Execution struct {
	// Executor executes the run.
	Executor Executor
	// Options come after the run's own (Run.Options): the Saver, the
	// answers of a resume, the events to yield.
	Options []graph.Option
	// Meter is the run's meter (own, of Meter), or nil: Execute puts it in
	// the run's context, and counts in it the model calls of a Remote
	// executor.
	Meter *llm.Meter
	// Recorder records the run (nil: not recorded), in a recording of its
	// own, or with Takeover in the one another process began and recorded
	// After events of (a replica's run taken over).
	Recorder *trace.Recorder
	Takeover bool
	After    int64
	// Recording, if set, is given the run's recorder and index entry once
	// its recording began, before its first event (the server counts it
	// in its owner's stored bytes there).
	Recording func(rr *trace.RunRecorder, info trace.RunInfo)
	// RecordingError, if set, is told why the run is not recorded, or not
	// whole (the run goes on): errors.Is(err, trace.ErrLimit) for a
	// recording stopped at its limit.
	RecordingError func(err error)
	// Failure, if set, maps the executor's error to the one the run's
	// recording, its events and its Outcome.Err show (the server hides
	// its internal failures behind a request id).
	Failure func(error) error
	// Observe, if set, sees each event in order, with the error the
	// executor yielded with it (the event's Err is Failure's).
	Observe func(ev graph.Event, err error)
}

// Outcome is how an executed run ended.
type Outcome struct {
	// Status is the run's status at its end (done or interrupted); ""
	// when it failed.
	Status graph.Status
	// End is the root's run_end event (zero when there was none);
	// Interrupts the questions of a run interrupted.
	End        graph.Event
	Interrupts []graph.InterruptInfo
	// Err is the run's failure as Failure mapped it, Cause as the
	// executor yielded it.
	Err, Cause error
	// Recording is the id of the run's recording ("": not recorded).
	Recording string
}

// Execute executes r on x.Executor, from its recording's beginning to its
// end: it records the run, gives its events to x.Observe, counts a
// remote executor's model calls in x.Meter, and returns how it ended.
// Every entry point executes its runs here: the server's (any transport,
// any replica) and the CLI's.
func Execute(ctx context.Context, r *Run, x Execution) Outcome {
	var out Outcome
	rr := r.beginRecording(ctx, x)
	out.Recording = rr.ID()
	if x.Meter != nil {
		ctx = llm.WithMeter(ctx, x.Meter)
	}
	count := IsRemote(x.Executor) && x.Meter != nil
	opts := append(r.Options(), x.Options...)
	for ev, err := range x.Executor.Stream(ctx, r.Input, opts...) {
		if err != nil {
			out.Cause, out.Err = err, err
			if x.Failure != nil {
				out.Err = x.Failure(err)
			}
			ev.Err = out.Err
		}
		rr.Observe(ev)
		if call, ok := ev.Data.(llm.ModelCall); ok && count {
			x.Meter.Add(call) // a worker made it: count it here, as a call made here is
		}
		if ev.Path == r.Graph {
			out.note(ev)
		}
		if x.Observe != nil {
			x.Observe(ev, err)
		}
	}
	if out.Err != nil {
		out.Status = ""
	}
	if err := rr.Finish(context.WithoutCancel(ctx), out.Err); err != nil && x.RecordingError != nil {
		x.RecordingError(fmt.Errorf("runs: run %q was not fully recorded: %w", r.ID, err))
	}
	return out
}

// note keeps what an event of the root says about the run's end.
func (o *Outcome) note(ev graph.Event) {
	switch ev.Kind {
	case graph.EventInterrupt:
		o.Interrupts, _ = ev.Data.([]graph.InterruptInfo)
		o.Status = graph.StatusInterrupted
	case graph.EventRunEnd:
		o.End = ev
		if st, ok := ev.Data.(graph.Status); ok {
			o.Status = st
		} else if o.Status == "" {
			o.Status = graph.StatusDone
		}
	}
}

// beginRecording begins r's recording (or goes on with the one a takeover
// continues), or returns nil when it is not recorded.
func (r *Run) beginRecording(ctx context.Context, x Execution) *trace.RunRecorder {
	if x.Recorder == nil {
		return nil
	}
	problem := func(err error) {
		if x.RecordingError != nil {
			x.RecordingError(err)
		}
	}
	info, err := r.Recording()
	if err != nil {
		problem(err)
	}
	var rr *trace.RunRecorder
	if x.Takeover {
		rr, err = x.Recorder.Continue(info, x.After)
	} else {
		rr, err = x.Recorder.Begin(context.WithoutCancel(ctx), info)
	}
	if err != nil {
		problem(fmt.Errorf("runs: run %q is not recorded: %w", r.ID, err))
		return nil
	}
	if x.Recording != nil {
		x.Recording(rr, info)
	}
	return rr
}
