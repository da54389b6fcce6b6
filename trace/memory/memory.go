package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/coorflow/coorflow/trace"
)

// Store is a trace.Store in memory. Its zero value is not usable; create
// one with New. It is safe for concurrent use.
type Store struct {
	mu   sync.RWMutex
	runs map[string]*runData
}

type runData struct {
	info   trace.RunInfo
	events []trace.Event // by Seq
	seqs   map[int64]bool
}

var _ trace.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store { return &Store{runs: map[string]*runData{}} }

// CreateRun adds run to the index.
func (s *Store) CreateRun(ctx context.Context, run trace.RunInfo) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[run.ID]; ok {
		return fmt.Errorf("memory: create run %q: %w", run.ID, trace.ErrRunExists)
	}
	s.runs[run.ID] = &runData{info: cloneRun(run), seqs: map[int64]bool{}}
	return nil
}

// AppendEvents stores events, all or none.
func (s *Store) AppendEvents(ctx context.Context, events []trace.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range events {
		if _, ok := s.runs[e.RunID]; !ok {
			return fmt.Errorf("memory: append events of run %q: %w", e.RunID, trace.ErrNotFound)
		}
	}
	touched := map[*runData]bool{}
	for _, e := range events {
		rd := s.runs[e.RunID]
		if rd.seqs[e.Seq] {
			continue
		}
		rd.seqs[e.Seq] = true
		rd.events = append(rd.events, cloneEvent(e))
		touched[rd] = true
	}
	for rd := range touched {
		slices.SortStableFunc(rd.events, func(a, b trace.Event) int { return int(a.Seq - b.Seq) })
	}
	return nil
}

// FinishRun records how a run ended.
func (s *Store) FinishRun(ctx context.Context, run trace.RunInfo) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rd, ok := s.runs[run.ID]
	if !ok {
		return fmt.Errorf("memory: finish run %q: %w", run.ID, trace.ErrNotFound)
	}
	c := cloneRun(run)
	rd.info.Status, rd.info.EndedAt, rd.info.FinalState, rd.info.Error, rd.info.Events =
		c.Status, c.EndedAt, c.FinalState, c.Error, c.Events
	return nil
}

// Run returns a run of the index.
func (s *Store) Run(ctx context.Context, id string) (trace.RunInfo, error) {
	if err := ctx.Err(); err != nil {
		return trace.RunInfo{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	rd, ok := s.runs[id]
	if !ok {
		return trace.RunInfo{}, fmt.Errorf("memory: run %q: %w", id, trace.ErrNotFound)
	}
	return cloneRun(rd.info), nil
}

// Runs returns the runs q selects, the most recently started first.
func (s *Store) Runs(ctx context.Context, q trace.RunQuery) ([]trace.RunInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []trace.RunInfo
	for _, rd := range s.runs {
		if q.Match(rd.info) {
			out = append(out, rd.info) // shared until cloned below
		}
	}
	slices.SortFunc(out, func(a, b trace.RunInfo) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return compareStrings(b.ID, a.ID)
	})
	if n := q.EffectiveLimit(); len(out) > n {
		out = out[:n]
	}
	for i, r := range out {
		if q.Brief {
			r.Input, r.Runtime, r.FinalState = nil, nil, nil
		}
		out[i] = cloneRun(r)
	}
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Events returns the events of run id that q selects.
func (s *Store) Events(ctx context.Context, id string, q trace.EventQuery) ([]trace.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	rd, ok := s.runs[id]
	if !ok {
		return nil, fmt.Errorf("memory: events of run %q: %w", id, trace.ErrNotFound)
	}
	// Events are kept by Seq: a page starts after q.After without
	// looking at the events before.
	from, _ := slices.BinarySearchFunc(rd.events, q.After+1, func(e trace.Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
	var out []trace.Event
	var used int64
	for _, e := range rd.events[from:] {
		if q.Until > 0 && e.Seq > q.Until {
			break
		}
		if !q.Match(e) {
			continue
		}
		if !q.Bodies {
			e.Request, e.Response = nil, nil
		}
		size := e.Size()
		if !q.Fits(len(out), used, size) {
			break
		}
		out = append(out, cloneEvent(e))
		used += size
	}
	return out, nil
}

// DeleteRun removes a run and its events.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[id]; !ok {
		return fmt.Errorf("memory: delete run %q: %w", id, trace.ErrNotFound)
	}
	delete(s.runs, id)
	return nil
}

// Prune removes the runs p does not keep, with their events.
func (s *Store) Prune(ctx context.Context, p trace.RetentionPolicy) (trace.PruneReport, error) {
	if err := ctx.Err(); err != nil {
		return trace.PruneReport{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	runs := make([]trace.RunInfo, 0, len(s.runs))
	for _, rd := range s.runs {
		runs = append(runs, rd.info)
	}
	rep := p.Expired(runs)
	if !p.DryRun {
		for _, r := range rep.Runs {
			delete(s.runs, r.Run)
		}
	}
	return rep, nil
}

func cloneRun(r trace.RunInfo) trace.RunInfo {
	r.Input = bytes.Clone(r.Input)
	r.FinalState = bytes.Clone(r.FinalState)
	r.Runtime = maps.Clone(r.Runtime)
	r.StartedAt = micro(r.StartedAt)
	if r.EndedAt != nil {
		t := micro(*r.EndedAt)
		r.EndedAt = &t
	}
	return r
}

func cloneEvent(e trace.Event) trace.Event {
	e.Payload = bytes.Clone(e.Payload)
	e.Request = bytes.Clone(e.Request)
	e.Response = bytes.Clone(e.Response)
	e.Time = micro(e.Time)
	return e
}

// micro keeps t to the microsecond, in UTC, as the database stores do.
func micro(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

var _ trace.Sizer = (*Store)(nil)

// OwnerBytes is the bytes the store keeps for the owner's runs, as
// trace.RunInfo.Size and trace.Event.Size count them.
func (s *Store) OwnerBytes(ctx context.Context, owner string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var n int64
	for _, r := range s.runs {
		if r.info.Owner != owner {
			continue
		}
		n += r.info.Size()
		for _, e := range r.events {
			n += e.Size()
		}
	}
	return n, nil
}
