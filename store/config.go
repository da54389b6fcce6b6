package store

import "time"

// DefaultKeepRevisions is how many past revisions of a JSON item are kept
// as merge bases.
const DefaultKeepRevisions = 16

// Config tunes a Store built by New. The zero value is ready to use.
type Config struct {
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
	if c.KeepRevisions == 0 {
		c.KeepRevisions = DefaultKeepRevisions
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
