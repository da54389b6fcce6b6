package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/store"
)

var (
	// ErrNotFound: no eval run has that id.
	ErrNotFound = errors.New("eval: no such eval run")
	// ErrMismatch: an eval run resumed with another workflow or dataset.
	ErrMismatch = errors.New("eval: the eval run evaluated something else")
)

// Store keeps eval runs: a header per run (Result without its trials)
// and each trial as it ends, so that a killed eval resumes.
type Store interface {
	SaveRun(ctx context.Context, r *Result) error
	// LoadRun returns the header of eval run id, or ErrNotFound.
	LoadRun(ctx context.Context, id string) (*Result, error)
	// ListRuns returns the headers of every eval run, newest first.
	ListRuns(ctx context.Context) ([]*Result, error)
	SaveTrial(ctx context.Context, id string, t *Trial) error
	// Trials returns the trials of eval run id.
	Trials(ctx context.Context, id string) ([]*Trial, error)
}

// LoadResult returns eval run id with its trials, summed up.
func LoadResult(ctx context.Context, s Store, id string) (*Result, error) {
	r, err := s.LoadRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Trials, err = s.Trials(ctx, id); err != nil {
		return nil, err
	}
	r.summarize(nil)
	return r, nil
}

// header is the result without its trials, as a Store keeps it.
func (r *Result) header() *Result {
	h := *r
	h.Cases, h.Trials = nil, nil
	return &h
}

// DocStore keeps eval runs in a store.Store (the database the recorded
// runs and threads are in: SQLite or PostgreSQL), under
// project/coorflow/evals/ of an owner: one item per eval run and one per
// trial.
type DocStore struct {
	st    store.Store
	owner string
}

// NewDocStore returns the eval runs of owner in st.
func NewDocStore(st store.Store, owner string) *DocStore {
	return &DocStore{st: st, owner: owner}
}

const evalsPrefix = "project/coorflow/evals/"

func runPath(id string) string { return evalsPrefix + id + "/run" }

func trialPath(id string, t *Trial) string {
	return fmt.Sprintf("%s%s/trials/%s.%d", evalsPrefix, id, t.Case, t.Repeat)
}

// SaveRun implements Store.
func (d *DocStore) SaveRun(ctx context.Context, r *Result) error {
	return d.put(ctx, runPath(r.ID), r.header())
}

// SaveTrial implements Store.
func (d *DocStore) SaveTrial(ctx context.Context, id string, t *Trial) error {
	return d.put(ctx, trialPath(id, t), t)
}

func (d *DocStore) put(ctx context.Context, path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("eval: store %s: %w", path, err)
	}
	attrs := store.Attrs{ContentType: store.ContentJSON}
	for range 3 {
		_, err = d.st.Add(ctx, d.owner, path, string(b), attrs)
		if !errors.Is(err, store.ErrExists) {
			break
		}
		var it store.Item
		if it, err = d.st.Get(ctx, d.owner, path); err != nil {
			continue
		}
		if _, err = d.st.Edit(ctx, d.owner, path, store.Replace(it.Revision, string(b))); err == nil {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("eval: store %s: %w", path, err)
	}
	return nil
}

// LoadRun implements Store.
func (d *DocStore) LoadRun(ctx context.Context, id string) (*Result, error) {
	if !runID.MatchString(id) {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	it, err := d.st.Get(ctx, d.owner, runPath(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("eval: load eval run %s: %w", id, err)
	}
	var r Result
	if err := json.Unmarshal([]byte(it.Content), &r); err != nil {
		return nil, fmt.Errorf("eval: eval run %s: unreadable record: %w", id, err)
	}
	return &r, nil
}

// ListRuns implements Store.
func (d *DocStore) ListRuns(ctx context.Context) ([]*Result, error) {
	paths, err := d.list(ctx, evalsPrefix, "/run")
	if err != nil {
		return nil, err
	}
	var out []*Result
	for _, path := range paths {
		id := strings.TrimSuffix(strings.TrimPrefix(path, evalsPrefix), "/run")
		r, err := d.LoadRun(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Result) int { return b.Started.Compare(a.Started) })
	return out, nil
}

// Trials implements Store.
func (d *DocStore) Trials(ctx context.Context, id string) ([]*Trial, error) {
	paths, err := d.list(ctx, evalsPrefix+id+"/trials/", "")
	if err != nil {
		return nil, err
	}
	var out []*Trial
	for _, path := range paths {
		it, err := d.st.Get(ctx, d.owner, path)
		if err != nil {
			return nil, fmt.Errorf("eval: trial %s: %w", path, err)
		}
		var t Trial
		if err := json.Unmarshal([]byte(it.Content), &t); err != nil {
			return nil, fmt.Errorf("eval: trial %s: unreadable record: %w", path, err)
		}
		out = append(out, &t)
	}
	return out, nil
}

// list returns the paths under prefix that end in suffix.
func (d *DocStore) list(ctx context.Context, prefix, suffix string) ([]string, error) {
	var out []string
	opts := store.ListOptions{Limit: store.MaxListLimit}
	for {
		page, err := d.st.List(ctx, d.owner, prefix, opts)
		if err != nil {
			return nil, fmt.Errorf("eval: list %s: %w", prefix, err)
		}
		for _, m := range page.Items {
			if strings.HasSuffix(m.Path, suffix) {
				out = append(out, m.Path)
			}
		}
		if page.Next == "" {
			return out, nil
		}
		opts.After = page.Next
	}
}
