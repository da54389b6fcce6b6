package board

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coorflow/coorflow/store"
)

// Retention defaults: what a zero RetentionPolicy keeps.
const (
	DefaultMaxAge  = 7 * 24 * time.Hour
	DefaultMaxRuns = 1000
)

// Reasons a run is pruned (PrunedRun.Reason).
const (
	PrunedForAge   = "age"
	PrunedForCount = "count"
)

// DefaultRunPrefixes are where Prune looks for runs: the mission boards
// and the archived transcripts.
var DefaultRunPrefixes = []string{MissionPrefix, TranscriptsPrefix}

// RetentionPolicy says which runs Prune removes. A run is the set of items
// under <prefix><run-id>/ for each of Prefixes; its last activity is the
// newest Updated time among them. A run is removed when it is not among
// the MaxRuns most recently active runs, or when its last activity is older
// than MaxAge.
type RetentionPolicy struct {
	// MaxAge: 0 means DefaultMaxAge (7 days); negative means no age limit.
	MaxAge time.Duration
	// MaxRuns: 0 means DefaultMaxRuns (1,000); negative means no limit.
	MaxRuns int
	// Now is the time ages are measured from; zero means time.Now().
	Now time.Time
	// Prefixes lists where runs live, each ending in "/"; nil means
	// DefaultRunPrefixes.
	Prefixes []string
	// DryRun reports what would be removed without removing it.
	DryRun bool
}

// PruneReport says what Prune removed.
type PruneReport struct {
	Runs  []PrunedRun // oldest first
	Items int         // items removed, over all runs
	Kept  int         // runs kept
}

// PrunedRun is one removed run.
type PrunedRun struct {
	Run          string
	LastActivity time.Time
	Reason       string   // PrunedForAge or PrunedForCount
	Paths        []string // the items removed
}

// A runGroup is a run found while pruning.
type runGroup struct {
	id    string
	last  time.Time
	metas []store.Meta
}

// Prune removes owner's runs from s as p says, and reports what it
// removed. It lists the runs, then deletes each item at the revision it
// listed (store.Store.Delete): an item written or deleted since is left
// alone, so a run that is active again loses nothing written after the
// listing. The items of a run are deleted one by one; a Prune that fails
// half-way leaves the rest of the run, for the next Prune to remove.
func Prune(ctx context.Context, s store.Store, owner string, p RetentionPolicy) (PruneReport, error) {
	p, err := p.withDefaults()
	if err != nil {
		return PruneReport{}, err
	}
	runs, err := collectRuns(ctx, s, owner, p.Prefixes)
	if err != nil {
		return PruneReport{}, fmt.Errorf("board: prune: %w", err)
	}
	var rep PruneReport
	for i, r := range runs {
		var reason string
		switch {
		case p.MaxRuns >= 0 && i >= p.MaxRuns:
			reason = PrunedForCount
		case p.MaxAge >= 0 && p.Now.Sub(r.last) > p.MaxAge:
			reason = PrunedForAge
		default:
			rep.Kept++
			continue
		}
		var paths []string
		if p.DryRun {
			for _, m := range r.metas {
				paths = append(paths, m.Path)
			}
		} else {
			paths, err = removeRun(ctx, s, owner, r)
		}
		rep.Items += len(paths)
		rep.Runs = append(rep.Runs, PrunedRun{Run: r.id, LastActivity: r.last, Reason: reason, Paths: paths})
		if err != nil {
			slices.Reverse(rep.Runs)
			return rep, fmt.Errorf("board: prune run %q: %w", r.id, err)
		}
	}
	slices.Reverse(rep.Runs)
	return rep, nil
}

func (p RetentionPolicy) withDefaults() (RetentionPolicy, error) {
	if p.MaxAge == 0 {
		p.MaxAge = DefaultMaxAge
	}
	if p.MaxRuns == 0 {
		p.MaxRuns = DefaultMaxRuns
	}
	if p.Now.IsZero() {
		p.Now = time.Now()
	}
	if p.Prefixes == nil {
		p.Prefixes = DefaultRunPrefixes
	}
	for _, pre := range p.Prefixes {
		if !strings.HasSuffix(pre, "/") {
			return p, fmt.Errorf("board: prune: %w: run prefix %q must end in a slash", store.ErrInvalid, pre)
		}
		if err := store.CheckPrefix(pre); err != nil {
			return p, fmt.Errorf("board: prune: run prefix: %w", err)
		}
	}
	return p, nil
}

// collectRuns lists the runs under prefixes, most recently active first.
func collectRuns(ctx context.Context, s store.Store, owner string, prefixes []string) ([]*runGroup, error) {
	byID := map[string]*runGroup{}
	for _, pre := range prefixes {
		opts := store.ListOptions{Limit: store.MaxListLimit}
		for {
			page, err := s.List(ctx, owner, pre, opts)
			if err != nil {
				return nil, err
			}
			for _, m := range page.Items {
				id, rest, ok := strings.Cut(strings.TrimPrefix(m.Path, pre), "/")
				if !ok || rest == "" {
					continue // an item directly under the prefix belongs to no run
				}
				g := byID[id]
				if g == nil {
					g = &runGroup{id: id}
					byID[id] = g
				}
				g.metas = append(g.metas, m)
				if m.Updated.After(g.last) {
					g.last = m.Updated
				}
			}
			if page.Next == "" {
				break
			}
			opts.After = page.Next
		}
	}
	runs := make([]*runGroup, 0, len(byID))
	for _, g := range byID {
		runs = append(runs, g)
	}
	slices.SortFunc(runs, func(a, b *runGroup) int {
		return cmp.Or(b.last.Compare(a.last), strings.Compare(b.id, a.id))
	})
	return runs, nil
}

// removeRun deletes a run's items at the revisions they were listed at,
// skipping any item written or deleted since. It returns the paths
// removed, also when it fails part-way.
func removeRun(ctx context.Context, s store.Store, owner string, r *runGroup) ([]string, error) {
	var removed []string
	for _, m := range r.metas {
		err := s.Delete(ctx, owner, m.Path, m.Revision)
		switch {
		case err == nil:
			removed = append(removed, m.Path)
		case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
			// written or deleted since it was listed: not ours to remove
		default:
			return removed, err
		}
	}
	return removed, nil
}
