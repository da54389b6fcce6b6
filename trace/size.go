package trace

import "context"

// Fixed bytes counted for the numbers and times of an event and a run, on
// top of their strings and JSON.
const (
	eventOverhead = 40
	runOverhead   = 32
)

// Size is about the bytes a Store keeps for e: its strings, payload and
// bodies, and a fixed part for its numbers.
func (e Event) Size() int64 {
	return int64(len(e.RunID)+len(e.Kind)+len(e.Path)+len(e.Node)+len(e.Agent)+len(e.Payload)+len(e.Error)+
		len(e.Hash)+len(e.Request)+len(e.Response)) + eventOverhead
}

// Size is about the bytes a Store keeps for r in its index: its strings,
// input, runtime values and final state, and a fixed part for its
// numbers and times.
func (r RunInfo) Size() int64 {
	n := len(r.ID) + len(r.Thread) + len(r.GraphThread) + len(r.Workflow) + len(r.Graph) + len(r.Owner) +
		len(r.Status) + len(r.Start) + len(r.Input) + len(r.FinalState) + len(r.Error)
	for k, v := range r.Runtime {
		n += len(k) + len(v) + 6 // as JSON: "k":"v",
	}
	return int64(n) + runOverhead
}

// A Sizer is a Store that can tell how many bytes it keeps for the runs
// of an owner (RunInfo.Owner): their index entries and events, about as
// RunInfo.Size and Event.Size count them. trace/sqlite, trace/postgres
// and trace/memory are Sizers.
type Sizer interface {
	OwnerBytes(ctx context.Context, owner string) (int64, error)
}
