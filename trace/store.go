package trace

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// Errors of a Store.
var (
	// ErrNotFound: no run of that id (or events for a run not created).
	ErrNotFound = errors.New("trace: run not found")
	// ErrRunExists: CreateRun with an id already in the index.
	ErrRunExists = errors.New("trace: run already exists")
	// ErrClosed: the Store or Recorder was closed.
	ErrClosed = errors.New("trace: closed")
)

// Store keeps recorded runs: an index of runs and each run's events.
// trace/sqlite, trace/postgres and trace/memory implement it, and
// trace/tracetest checks the contract. A Store is safe for concurrent use.
type Store interface {
	// CreateRun adds a run to the index; an id already there fails with
	// ErrRunExists.
	CreateRun(ctx context.Context, run RunInfo) error
	// AppendEvents stores events of any runs, all or none. Events of a run
	// not in the index fail with ErrNotFound. An event whose run and Seq
	// are already stored is ignored, so a batch can be written again.
	AppendEvents(ctx context.Context, events []Event) error
	// FinishRun records how a run ended: Status, EndedAt, FinalState,
	// Error and Events of run replace the stored ones; the other fields
	// stay. An unknown run fails with ErrNotFound.
	FinishRun(ctx context.Context, run RunInfo) error
	// Run returns a run of the index, or ErrNotFound.
	Run(ctx context.Context, id string) (RunInfo, error)
	// Runs returns the runs q selects, the most recently started first
	// (by StartedAt, then by ID, both descending), no more than q's Limit;
	// with q.Brief, without their large fields. AllRuns reads them all a
	// page at a time.
	Runs(ctx context.Context, q RunQuery) ([]RunInfo, error)
	// Events returns a page of the events of run id that q selects, by
	// Seq: no more than q's Limit and MaxBytes allow (EffectiveLimit,
	// Fits). The next page starts after the last event's Seq; AllEvents
	// reads them all. An unknown run fails with ErrNotFound.
	Events(ctx context.Context, id string, q EventQuery) ([]Event, error)
	// DeleteRun removes a run and its events; an unknown run fails with
	// ErrNotFound.
	DeleteRun(ctx context.Context, id string) error
	// Prune removes the runs, with their events, that p does not keep
	// (RetentionPolicy.Expired decides), or only reports them when
	// p.DryRun is set.
	Prune(ctx context.Context, p RetentionPolicy) (PruneReport, error)
}

// Match reports whether q selects e, apart from Limit and MaxBytes.
// Stores that filter in Go use it.
func (q EventQuery) Match(e Event) bool {
	if e.Seq <= q.After || (q.Until > 0 && e.Seq > q.Until) {
		return false
	}
	if len(q.Kinds) > 0 && !slices.Contains(q.Kinds, e.Kind) {
		return false
	}
	return q.Path == "" || UnderPath(e.Path, q.Path)
}

// EffectiveLimit is how many events q returns at most: q.Limit, or
// MaxEventLimit when q.Limit is 0 or less, or more than that.
func (q EventQuery) EffectiveLimit() int {
	if q.Limit <= 0 || q.Limit > MaxEventLimit {
		return MaxEventLimit
	}
	return q.Limit
}

// EffectiveMaxBytes is how many bytes of events q returns at most, but
// for its first event: q.MaxBytes, DefaultEventBytes when 0 or less, or
// MaxEventBytes when more than that.
func (q EventQuery) EffectiveMaxBytes() int64 {
	if q.MaxBytes <= 0 {
		return DefaultEventBytes
	}
	return min(q.MaxBytes, MaxEventBytes)
}

// Fits reports whether an event of size bytes (Event.Size) joins a page
// of q that holds n events of used bytes: within q's Limit, the first
// event always, another while the page stays within q's MaxBytes.
// Stores use it to end a page.
func (q EventQuery) Fits(n int, used, size int64) bool {
	return n < q.EffectiveLimit() && (n == 0 || used+size <= q.EffectiveMaxBytes())
}

// UnderPath reports whether path is prefix or lies below it
// ("a/b/c" lies below "a/b", "a/bc" does not).
func UnderPath(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// Match reports whether q selects r, apart from Limit and Brief.
func (q RunQuery) Match(r RunInfo) bool {
	return (q.Owner == "" || r.Owner == q.Owner) &&
		(q.Thread == "" || r.Thread == q.Thread) &&
		(q.Workflow == "" || r.Workflow == q.Workflow) &&
		(q.Status == "" || r.Status == q.Status) &&
		q.beforeCursor(r)
}

// beforeCursor reports whether r comes after the cursor (Before,
// BeforeID) in the order of Runs, or there is no cursor.
func (q RunQuery) beforeCursor(r RunInfo) bool {
	switch {
	case q.Before.IsZero():
		return true
	case r.StartedAt.Before(q.Before):
		return true
	}
	return q.BeforeID != "" && r.StartedAt.Equal(q.Before) && r.ID < q.BeforeID
}

// EffectiveLimit is q.Limit, or DefaultRunLimit when it is 0 or less.
func (q RunQuery) EffectiveLimit() int {
	if q.Limit <= 0 {
		return DefaultRunLimit
	}
	return q.Limit
}
