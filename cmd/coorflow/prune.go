package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coorflow/coorflow/trace"
)

// defaultPruneEvery is how often serve prunes the recorded runs.
const defaultPruneEvery = time.Hour

// ageFlag is a duration flag that also takes days ("30d") and "none" (no
// limit: -1).
type ageFlag struct{ d time.Duration }

func (f *ageFlag) String() string { return formatAge(f.d) }

func (f *ageFlag) Set(s string) error {
	if s == "none" {
		f.d = -1
		return nil
	}
	d, err := parseAge(s)
	if err != nil {
		return err
	}
	if d <= 0 {
		return errors.New("give a positive age such as 30d or 12h, or none for no limit")
	}
	f.d = d
	return nil
}

func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an age such as 30d or 12h", s)
	}
	return d, nil
}

func formatAge(d time.Duration) string {
	switch {
	case d < 0:
		return "none"
	case d > 0 && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// countFlag is a count flag that also takes "none" (no limit: -1).
type countFlag struct{ n int }

func (f *countFlag) String() string {
	if f.n < 0 {
		return "none"
	}
	return strconv.Itoa(f.n)
}

func (f *countFlag) Set(s string) error {
	if s == "none" {
		f.n = -1
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return fmt.Errorf("give a number of runs of at least 1, or none for no limit")
	}
	f.n = n
	return nil
}

// retentionFlags are the flags that say which recorded runs are kept.
type retentionFlags struct {
	maxAge  ageFlag
	maxRuns countFlag
}

// addRetentionFlags adds prefix+"max-age" and prefix+"max-runs".
func addRetentionFlags(fs *flag.FlagSet, prefix string) *retentionFlags {
	r := &retentionFlags{maxAge: ageFlag{trace.DefaultMaxAge}, maxRuns: countFlag{trace.DefaultMaxRuns}}
	fs.Var(&r.maxAge, prefix+"max-age", "remove recorded runs older than this (30d, 12h, or none)")
	fs.Var(&r.maxRuns, prefix+"max-runs", "keep at most this many recorded runs of each owner (or none)")
	return r
}

func (r *retentionFlags) policy() trace.RetentionPolicy {
	return trace.RetentionPolicy{MaxAge: r.maxAge.d, MaxRuns: r.maxRuns.n}
}

// summary says what a prune removed, for a person.
func summary(rep trace.PruneReport) string {
	byAge := 0
	for _, r := range rep.Runs {
		if r.Reason == trace.PrunedForAge {
			byAge++
		}
	}
	s := fmt.Sprintf("%d recorded run(s)", len(rep.Runs))
	if len(rep.Runs) > 0 {
		s += fmt.Sprintf(" (%d for their age, %d for the count)", byAge, len(rep.Runs)-byAge)
	}
	return s + fmt.Sprintf("; %d kept", rep.Kept)
}

// pruneRuns is coorflow runs prune.
func (a *app) pruneRuns(ctx context.Context, traces trace.Store, p trace.RetentionPolicy, asJSON bool) error {
	rep, err := traces.Prune(ctx, p)
	if err != nil {
		return err
	}
	if asJSON {
		if rep.Runs == nil {
			rep.Runs = []trace.PrunedRun{}
		}
		return writeJSON(a, rep)
	}
	verb := "removed"
	if p.DryRun {
		verb = "would remove"
	}
	fmt.Fprintf(a.stdout, "%s %s\n", verb, summary(rep))
	for _, r := range rep.Runs {
		fmt.Fprintf(a.stdout, "  %s  %-10s %s  %s\n", r.Run, orDash(r.Owner), r.LastActivity.Local().Format("2006-01-02 15:04:05"), r.Reason)
	}
	return nil
}

// pruner prunes the recorded runs of a server: once when it starts, then
// on every tick.
type pruner struct {
	app    *app
	traces trace.Store
	policy trace.RetentionPolicy
}

// once prunes and says what it removed; a failure is a notice, the server
// goes on.
func (p *pruner) once(ctx context.Context) {
	rep, err := p.traces.Prune(ctx, p.policy)
	switch {
	case err != nil && ctx.Err() == nil:
		p.app.notice("pruning the recorded runs: %v", err)
	case len(rep.Runs) > 0:
		p.app.notice("pruned %s", summary(rep))
	}
}

// loop prunes on every tick until ctx ends.
func (p *pruner) loop(ctx context.Context, ticks <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			p.once(ctx)
		}
	}
}

// startPruner prunes the recorded runs now and then every interval in
// the background, and returns the function that stops it. With every 0
// or less it does nothing.
func (a *app) startPruner(ctx context.Context, traces trace.Store, r *retentionFlags, every time.Duration) (stop func()) {
	if every <= 0 || traces == nil {
		return func() {}
	}
	p := &pruner{app: a, traces: traces, policy: r.policy()}
	p.once(ctx)
	ctx, cancel := context.WithCancel(ctx)
	tick := time.NewTicker(every)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.loop(ctx, tick.C)
	}()
	return func() {
		cancel()
		tick.Stop()
		<-done
	}
}
