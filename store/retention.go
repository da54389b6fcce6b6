package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Retention defaults.
const (
	DefaultMaxAge  = 7 * 24 * time.Hour
	DefaultMaxRuns = 1000
)

// TranscriptsPrefix is where archived run transcripts live:
// memory/transcripts/<run-id>/...
const TranscriptsPrefix = "memory/transcripts/"

// MissionPrefix is where mission boards live: mission/<run-id>/...
const MissionPrefix = "mission/"

// DefaultRunPrefixes are the places Prune looks for runs.
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
	// Now is the time ages are measured from; zero means the store's clock.
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
	Reason       string   // "age" or "count"
	Paths        []string // the items removed
}

// A runGroup is a run found while pruning.
type runGroup struct {
	id    string
	last  time.Time
	metas []Meta
}

func (s *core) Prune(ctx context.Context, owner string, p RetentionPolicy) (PruneReport, error) {
	if err := checkOwner(owner); err != nil {
		return PruneReport{}, &PathError{Op: "prune", Owner: owner, Err: err, Detail: trimPrefix(err)}
	}
	p, err := s.retentionDefaults(p)
	if err != nil {
		return PruneReport{}, &PathError{Op: "prune", Owner: owner, Err: err, Detail: trimPrefix(err)}
	}
	runs, err := s.collectRuns(ctx, owner, p.Prefixes)
	if err != nil {
		return PruneReport{}, err
	}
	var rep PruneReport
	for i, r := range runs {
		reason := ""
		switch {
		case p.MaxRuns >= 0 && i >= p.MaxRuns:
			reason = "count"
		case p.MaxAge >= 0 && p.Now.Sub(r.last) > p.MaxAge:
			reason = "age"
		default:
			rep.Kept++
			continue
		}
		paths := make([]string, 0, len(r.metas))
		if p.DryRun {
			for _, m := range r.metas {
				paths = append(paths, m.Path)
			}
		} else if paths, err = s.removeRun(ctx, owner, r); err != nil {
			return rep, err
		}
		rep.Items += len(paths)
		rep.Runs = append(rep.Runs, PrunedRun{Run: r.id, LastActivity: r.last, Reason: reason, Paths: paths})
	}
	slices.Reverse(rep.Runs)
	return rep, nil
}

func (s *core) retentionDefaults(p RetentionPolicy) (RetentionPolicy, error) {
	if p.MaxAge == 0 {
		p.MaxAge = DefaultMaxAge
	}
	if p.MaxRuns == 0 {
		p.MaxRuns = DefaultMaxRuns
	}
	if p.Now.IsZero() {
		p.Now = s.now()
	}
	if p.Prefixes == nil {
		p.Prefixes = DefaultRunPrefixes
	}
	for _, pre := range p.Prefixes {
		if !strings.HasSuffix(pre, "/") {
			return p, fmt.Errorf("%w: run prefix %q must end in a slash", ErrInvalid, pre)
		}
		if err := CheckPrefix(pre); err != nil {
			return p, err
		}
	}
	return p, nil
}

// collectRuns lists the runs under prefixes, most recently active first.
func (s *core) collectRuns(ctx context.Context, owner string, prefixes []string) ([]*runGroup, error) {
	byID := map[string]*runGroup{}
	for _, pre := range prefixes {
		after := ""
		for {
			metas, err := s.b.List(ctx, owner, pre, after, MaxListLimit)
			if err != nil {
				return nil, wrap("prune", owner, pre, err)
			}
			for _, m := range metas {
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
			if len(metas) < MaxListLimit {
				break
			}
			after = metas[len(metas)-1].Path
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

// removeRun deletes a run's items in one transaction, skipping any item
// written since it was listed. It returns the paths removed.
func (s *core) removeRun(ctx context.Context, owner string, r *runGroup) ([]string, error) {
	var removed []string
	err := s.b.Update(ctx, owner, func(tx Tx) error {
		removed = removed[:0]
		for _, m := range r.metas {
			cur, err := tx.Get(ctx, m.Path)
			if errors.Is(err, ErrNotFound) || (err == nil && cur.Revision != m.Revision) {
				continue
			}
			if err != nil {
				return err
			}
			if err := tx.Delete(ctx, m.Path); err != nil {
				return err
			}
			removed = append(removed, m.Path)
		}
		return nil
	})
	if err != nil {
		return nil, wrap("prune", owner, MissionPrefix+r.id+"/", err)
	}
	return removed, nil
}
