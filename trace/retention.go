package trace

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Retention defaults: what a zero RetentionPolicy keeps.
const (
	DefaultMaxAge  = 30 * 24 * time.Hour
	DefaultMaxRuns = 10_000
)

// Reasons a run is pruned (PrunedRun.Reason).
const (
	PrunedForAge   = "age"
	PrunedForCount = "count"
)

// RetentionPolicy says which recorded runs Store.Prune removes, in the
// words of board.RetentionPolicy. A run's last activity is when it ended,
// or when it started if it has not ended. A run is removed when its last
// activity is older than MaxAge, or when it has ended and is not among the
// MaxRuns most recently started runs of its owner. The count is kept per
// owner, so that one caller's runs never push out another's; a run that
// has not ended is never removed for the count.
type RetentionPolicy struct {
	// MaxAge: 0 means DefaultMaxAge (30 days); negative means no age limit.
	MaxAge time.Duration
	// MaxRuns is how many runs of each owner are kept: 0 means
	// DefaultMaxRuns (10,000); negative means no limit.
	MaxRuns int
	// Owner limits pruning to one owner's runs; "" prunes every owner's.
	Owner string
	// Now is the time ages are measured from; zero means time.Now().
	Now time.Time
	// DryRun reports what would be removed without removing it.
	DryRun bool
}

// PruneReport says what Store.Prune removed.
type PruneReport struct {
	Runs []PrunedRun // oldest first
	Kept int         // runs kept (of Owner, when the policy names one)
}

// PrunedRun is one removed run.
type PrunedRun struct {
	Run          string    `json:"run_id"`
	Owner        string    `json:"owner,omitempty"`
	LastActivity time.Time `json:"last_activity"`
	Reason       string    `json:"reason"` // PrunedForAge or PrunedForCount
}

// WithDefaults returns p with its zero fields set to the defaults.
func (p RetentionPolicy) WithDefaults() RetentionPolicy {
	if p.MaxAge == 0 {
		p.MaxAge = DefaultMaxAge
	}
	if p.MaxRuns == 0 {
		p.MaxRuns = DefaultMaxRuns
	}
	if p.Now.IsZero() {
		p.Now = time.Now()
	}
	return p
}

// Expired applies p (with its defaults) to runs, of which only ID, Owner,
// StartedAt and EndedAt are read, and returns the report of a prune: the
// runs to remove, oldest first, and how many are kept. Runs of other
// owners than p.Owner, when it is set, are neither removed nor counted.
// Stores list their runs and call it, so that the rule has one definition.
func (p RetentionPolicy) Expired(runs []RunInfo) PruneReport {
	p = p.WithDefaults()
	byOwner := map[string][]RunInfo{}
	for _, r := range runs {
		if p.Owner == "" || r.Owner == p.Owner {
			byOwner[r.Owner] = append(byOwner[r.Owner], r)
		}
	}
	var rep PruneReport
	for _, list := range byOwner {
		slices.SortFunc(list, func(a, b RunInfo) int {
			return cmp.Or(b.StartedAt.Compare(a.StartedAt), strings.Compare(b.ID, a.ID))
		})
		for i, r := range list {
			last := r.StartedAt
			if r.EndedAt != nil {
				last = *r.EndedAt
			}
			reason := ""
			switch {
			case p.MaxAge >= 0 && p.Now.Sub(last) > p.MaxAge:
				reason = PrunedForAge
			case p.MaxRuns >= 0 && i >= p.MaxRuns && r.EndedAt != nil:
				reason = PrunedForCount
			default:
				rep.Kept++
				continue
			}
			rep.Runs = append(rep.Runs, PrunedRun{Run: r.ID, Owner: r.Owner, LastActivity: last.UTC(), Reason: reason})
		}
	}
	slices.SortFunc(rep.Runs, func(a, b PrunedRun) int {
		return cmp.Or(a.LastActivity.Compare(b.LastActivity), strings.Compare(a.Run, b.Run))
	})
	return rep
}

// PrunedIDs returns the ids of the runs of rep.
func (rep PruneReport) PrunedIDs() []string {
	out := make([]string, len(rep.Runs))
	for i, r := range rep.Runs {
		out[i] = r.Run
	}
	return out
}
