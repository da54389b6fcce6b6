package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/coorflow/coorflow/store"
)

// Board is the mission board of one run of one owner. It is safe for
// concurrent use; concurrent appends and edits are resolved with the
// store's compare-and-swap.
type Board struct {
	s      store.Store
	owner  string
	run    string
	prefix string
}

// New returns the board of run for owner, kept in s. run must be usable as
// a path segment.
func New(s store.Store, owner, run string) (*Board, error) {
	if err := store.CheckSegment(run); err != nil {
		return nil, fmt.Errorf("board: run id: %w", err)
	}
	if owner == "" {
		return nil, fmt.Errorf("board: %w: empty owner id", store.ErrInvalid)
	}
	return &Board{s: s, owner: owner, run: run, prefix: MissionPrefix + run + "/"}, nil
}

// Run returns the run id.
func (b *Board) Run() string { return b.run }

// Owner returns the owner id.
func (b *Board) Owner() string { return b.owner }

// Prefix returns the path prefix of the board, "mission/<run-id>/".
func (b *Board) Prefix() string { return b.prefix }

// Paths of the shared board, relative to Prefix.
const (
	PlanName      = "plan"
	ProgressName  = "progress"
	DecisionsName = "decisions"
	handoffsDir   = "handoffs/"
	outputsDir    = "outputs/"
	agentsDir     = "agents/"
)

// Option changes the attributes an item is written with.
type Option func(*store.Attrs)

// WithVisibility sets who may see the item.
func WithVisibility(v store.Visibility) Option { return func(a *store.Attrs) { a.Visibility = v } }

// WithSensitivity sets how far the item may travel.
func WithSensitivity(s Sensitivity) Option { return withLabel(LabelSensitivity, string(s)) }

// WithPriority sets the item's priority.
func WithPriority(p Priority) Option { return withLabel(LabelPriority, string(p)) }

// WithTrigger sets how the item reaches prompts.
func WithTrigger(t Trigger) Option { return withLabel(LabelTrigger, string(t)) }

// WithTrust sets who produced the item.
func WithTrust(t Trust) Option { return withLabel(LabelTrust, string(t)) }

func withLabel(key, value string) Option {
	return func(a *store.Attrs) {
		labels := maps.Clone(a.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[key] = value
		a.Labels = labels
	}
}

// attrs returns the attributes of p, of content type ct, changed by opts.
// It fails, wrapping store.ErrInvalid, when an option set an unknown
// priority, trust, sensitivity or trigger.
func attrs(p Prompt, ct store.ContentType, opts []Option) (store.Attrs, error) {
	a := store.Attrs{ContentType: ct, Labels: p.Labels()}
	for _, o := range opts {
		o(&a)
	}
	return a, promptLabels(a.Labels).Check()
}

// maxAttempts bounds the retries of an append that keeps meeting
// concurrent writers.
const maxAttempts = 100

// SetPlan stores plan as JSON. With revision 0 it creates the plan (an
// error wrapping store.ErrExists if there is one); otherwise it replaces
// the plan read at that revision, and a stale revision merges field by
// field or fails with a *store.ConflictError. By default the plan is
// critical, always loaded, public and internal.
func (b *Board) SetPlan(ctx context.Context, plan any, revision int64, opts ...Option) (store.Meta, error) {
	data, err := json.Marshal(plan)
	if err != nil {
		return store.Meta{}, fmt.Errorf("board: encode plan of run %q: %w", b.run, err)
	}
	path := b.prefix + PlanName
	if revision == 0 {
		a, err := attrs(Prompt{Priority: PriorityCritical, Trigger: TriggerAlways, Trust: TrustModel}, store.ContentJSON, opts)
		if err != nil {
			return store.Meta{}, fmt.Errorf("board: plan of run %q: %w", b.run, err)
		}
		return b.s.Add(ctx, b.owner, path, string(data), a)
	}
	e := store.Replace(revision, string(data))
	if len(opts) > 0 {
		a, err := attrs(Prompt{}, "", opts)
		if err != nil {
			return store.Meta{}, fmt.Errorf("board: plan of run %q: %w", b.run, err)
		}
		e = e.WithAttrs(a)
	}
	return b.s.Edit(ctx, b.owner, path, e)
}

// GetPlan decodes the plan into dst and returns its metadata; the
// revision in it is the one to pass to SetPlan.
func (b *Board) GetPlan(ctx context.Context, dst any) (store.Meta, error) {
	it, err := b.s.Get(ctx, b.owner, b.prefix+PlanName)
	if err != nil {
		return store.Meta{}, err
	}
	if err := json.Unmarshal([]byte(it.Content), dst); err != nil {
		return store.Meta{}, fmt.Errorf("board: decode plan of run %q: %w", b.run, err)
	}
	return it.Meta, nil
}

// AppendProgress adds one line, "[author] text" (or just text without an
// author), to the progress log. Concurrent appends are all kept.
func (b *Board) AppendProgress(ctx context.Context, author, text string) (store.Meta, error) {
	line := strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", " ")
	if author != "" {
		line = "[" + author + "] " + line
	}
	a := store.Attrs{Labels: Prompt{Priority: PriorityHigh, Trigger: TriggerAlways, Trust: TrustModel}.Labels()}
	return b.update(ctx, b.prefix+ProgressName, a, "", func(cur string) (string, error) {
		return cur + line + "\n", nil
	})
}

// Progress returns the progress log.
func (b *Board) Progress(ctx context.Context) (string, error) {
	it, err := b.s.Get(ctx, b.owner, b.prefix+ProgressName)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return it.Content, err
}

// Decision is one decision on the board.
type Decision struct {
	Author string    `json:"author,omitempty"`
	Text   string    `json:"text"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// AddDecision appends d to the decisions; a zero At is set to now.
func (b *Board) AddDecision(ctx context.Context, d Decision) (store.Meta, error) {
	if d.Text == "" {
		return store.Meta{}, fmt.Errorf("board: decision for run %q: %w: empty text", b.run, store.ErrInvalid)
	}
	if d.At.IsZero() {
		d.At = time.Now().UTC()
	}
	a := store.Attrs{ContentType: store.ContentJSON,
		Labels: Prompt{Priority: PriorityHigh, Trigger: TriggerAlways, Trust: TrustModel}.Labels()}
	return b.update(ctx, b.prefix+DecisionsName, a, "[]", func(cur string) (string, error) {
		var ds []Decision
		if err := json.Unmarshal([]byte(cur), &ds); err != nil {
			return "", fmt.Errorf("board: decisions of run %q: %w", b.run, err)
		}
		data, err := json.Marshal(append(ds, d))
		return string(data), err
	})
}

// Decisions returns the decisions in the order they were added.
func (b *Board) Decisions(ctx context.Context) ([]Decision, error) {
	it, err := b.s.Get(ctx, b.owner, b.prefix+DecisionsName)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ds []Decision
	if err := json.Unmarshal([]byte(it.Content), &ds); err != nil {
		return nil, fmt.Errorf("board: decisions of run %q: %w", b.run, err)
	}
	return ds, nil
}

// update creates the item at path from empty, or changes it with change,
// retrying on concurrent writes until it lands.
func (b *Board) update(ctx context.Context, path string, a store.Attrs, empty string, change func(string) (string, error)) (store.Meta, error) {
	var err error
	for range maxAttempts {
		var it store.Item
		it, err = b.s.Get(ctx, b.owner, path)
		if errors.Is(err, store.ErrNotFound) {
			var next string
			if next, err = change(empty); err != nil {
				return store.Meta{}, err
			}
			var m store.Meta
			m, err = b.s.Add(ctx, b.owner, path, next, a)
			if errors.Is(err, store.ErrExists) {
				continue
			}
			return m, err
		}
		if err != nil {
			return store.Meta{}, err
		}
		var next string
		if next, err = change(it.Content); err != nil {
			return store.Meta{}, err
		}
		var m store.Meta
		m, err = b.s.Edit(ctx, b.owner, path, store.Replace(it.Revision, next))
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		return m, err
	}
	return store.Meta{}, fmt.Errorf("board: %q: gave up after %d attempts: %w", path, maxAttempts, err)
}

// putOnce adds an item; when one already holds the same content it
// succeeds (so a retried step does not fail), when it holds different
// content it fails with store.ErrExists.
func (b *Board) putOnce(ctx context.Context, path, text string, a store.Attrs) (string, error) {
	_, err := b.s.Add(ctx, b.owner, path, text, a)
	if !errors.Is(err, store.ErrExists) {
		return path, err
	}
	it, gerr := b.s.Get(ctx, b.owner, path)
	if gerr == nil && it.Content == text {
		return path, nil
	}
	return "", err
}
