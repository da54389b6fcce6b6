package store

import (
	"context"
	"time"
)

// DefaultWarnSize is the size above which an item loaded into every prompt
// (TriggerAlways) raises a Warning: 10 KiB.
const DefaultWarnSize = 10 << 10

// DefaultKeepRevisions is how many past revisions of a JSON item are kept
// as merge bases.
const DefaultKeepRevisions = 16

// Config tunes a Store built by New. The zero value is ready to use.
type Config struct {
	// WarnSize is the size in bytes above which writing an item with
	// TriggerAlways calls OnWarning. 0 means DefaultWarnSize; a negative
	// value turns the warning off.
	WarnSize int64

	// OnWarning, when set, is called after a write that leaves an item
	// larger than WarnSize with TriggerAlways, with the writer's context.
	// It is called synchronously, outside any lock, from the goroutine that
	// wrote. When nil, the warning is published as a graph.EventWarning on
	// that context: a write made inside a running node shows in the run's
	// stream, others go nowhere.
	OnWarning func(context.Context, Warning)

	// KeepRevisions is how many past revisions of each JSON item are kept
	// so that a stale edit can be merged against the revision it was based
	// on. 0 means DefaultKeepRevisions; a negative value keeps none, and
	// every stale edit is then a conflict.
	KeepRevisions int

	// Now is the clock used for Created and Updated; nil means time.Now.
	// Times are stored in UTC with microsecond precision.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.WarnSize == 0 {
		c.WarnSize = DefaultWarnSize
	}
	if c.KeepRevisions == 0 {
		c.KeepRevisions = DefaultKeepRevisions
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Warning reports an item that is large for where it goes: an item
// injected into every prompt (TriggerAlways) whose size exceeds the
// configured limit.
type Warning struct {
	Owner    string
	Path     string
	Revision int64
	Trigger  Trigger
	Size     int64 // the item's size in bytes
	Limit    int64 // the configured limit it exceeds
}

// String describes the warning in one line.
func (w Warning) String() string {
	return "store: item " + quote(w.Path) + " (owner " + quote(w.Owner) + ") is " +
		itoa(w.Size) + " bytes, over the " + itoa(w.Limit) + "-byte limit for items with trigger " + string(w.Trigger)
}
