package board

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/store"
)

var (
	escapeID   = strings.NewReplacer("%", "%25", "-", "%2D")
	unescapeID = strings.NewReplacer("%2D", "-", "%25", "%")
)

func (b *Board) handoffPath(from, to string) (string, error) {
	for _, id := range []string{from, to} {
		if err := store.CheckSegment(id); err != nil {
			return "", fmt.Errorf("board: handoff %q to %q in run %q: %w", from, to, b.run, err)
		}
	}
	return b.prefix + handoffsDir + escapeID.Replace(from) + "-" + escapeID.Replace(to), nil
}

// PutHandoff writes what from hands to to, and returns its reference.
// from and to are agent run ids or task ids, as the caller's convention
// has it. A handoff is written once: writing the same text again succeeds,
// different text fails with store.ErrExists. By default it is public,
// internal, high priority and listed in the index; restrict it with
// WithVisibility(store.TaskScoped(to)) or store.AgentScoped(to).
func (b *Board) PutHandoff(ctx context.Context, from, to, text string, opts ...Option) (string, error) {
	path, err := b.handoffPath(from, to)
	if err != nil {
		return "", err
	}
	a, err := attrs(Prompt{Priority: PriorityHigh, Trigger: TriggerIndex, Trust: TrustModel}, "", opts)
	if err != nil {
		return "", fmt.Errorf("board: handoff %q to %q in run %q: %w", from, to, b.run, err)
	}
	return b.putOnce(ctx, path, text, a)
}

// Handoff returns the text from handed to to, as who may see it.
func (b *Board) Handoff(ctx context.Context, who store.Viewer, from, to string) (string, error) {
	path, err := b.handoffPath(from, to)
	if err != nil {
		return "", err
	}
	it, err := b.Get(ctx, who, path)
	return it.Content, err
}

// Handoff is one handoff as listed by HandoffsTo.
type Handoff struct {
	From, To string
	Ref      string
	Text     string
}

// HandoffsTo returns the handoffs addressed to to that who may see,
// ordered by sender.
func (b *Board) HandoffsTo(ctx context.Context, who store.Viewer, to string) ([]Handoff, error) {
	metas, err := b.Visible(ctx, who)
	if err != nil {
		return nil, err
	}
	var out []Handoff
	for _, m := range metas {
		name, ok := strings.CutPrefix(m.Path, b.prefix+handoffsDir)
		if !ok {
			continue
		}
		f, t, ok := strings.Cut(name, "-")
		if !ok || unescapeID.Replace(t) != to {
			continue
		}
		it, err := b.Get(ctx, who, m.Path)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Handoff{From: unescapeID.Replace(f), To: to, Ref: m.Path, Text: it.Content})
	}
	return out, nil
}

// PutOutput stores a full output under outputs/<name> and returns its
// reference (its path), from which Read reads it back page by page. name
// may contain slashes. An output is written once, like a handoff. By
// default it is public, internal, normal priority and listed in the index.
func (b *Board) PutOutput(ctx context.Context, name, text string, opts ...Option) (string, error) {
	path := b.prefix + outputsDir + name
	if err := store.CheckPath(path); err != nil {
		return "", fmt.Errorf("board: output %q of run %q: %w", name, b.run, err)
	}
	a, err := attrs(Prompt{Trigger: TriggerIndex, Trust: TrustModel}, "", opts)
	if err != nil {
		return "", fmt.Errorf("board: output %q of run %q: %w", name, b.run, err)
	}
	return b.putOnce(ctx, path, text, a)
}

// PrivatePrefix returns the prefix of agent's private board.
func (b *Board) PrivatePrefix(agent string) string {
	return b.prefix + agentsDir + agent + "/"
}

// PutPrivate writes (or overwrites) name on agent's private board and
// returns its reference. The item is visible to that agent run only,
// whatever the options say; it is internal by default.
func (b *Board) PutPrivate(ctx context.Context, agent, name, text string, opts ...Option) (string, error) {
	if err := store.CheckSegment(agent); err != nil {
		return "", fmt.Errorf("board: private board of agent %q in run %q: %w", agent, b.run, err)
	}
	path := b.PrivatePrefix(agent) + name
	if err := store.CheckPath(path); err != nil {
		return "", fmt.Errorf("board: private item %q of agent %q in run %q: %w", name, agent, b.run, err)
	}
	a, err := attrs(Prompt{Trust: TrustModel, Trigger: TriggerIndex}, "", opts)
	if err != nil {
		return "", fmt.Errorf("board: private item %q of agent %q in run %q: %w", name, agent, b.run, err)
	}
	a.Visibility = store.AgentScoped(agent)
	_, err = b.update(ctx, path, a, "", func(string) (string, error) { return text, nil })
	if err != nil {
		return "", err
	}
	return path, nil
}

// Sees reports whether who may see the board item m: never another
// agent's private board, and otherwise what m's visibility allows.
func (b *Board) Sees(who store.Viewer, m store.Meta) bool {
	if !strings.HasPrefix(m.Path, b.prefix) {
		return false
	}
	if rest, ok := strings.CutPrefix(m.Path, b.prefix+agentsDir); ok {
		agent, _, _ := strings.Cut(rest, "/")
		if agent == "" || agent != who.Agent {
			return false
		}
	}
	return m.Visibility.Allows(who)
}

func (b *Board) hidden(op, ref string) error {
	return &store.PathError{Op: op, Owner: b.owner, Path: ref, Err: store.ErrNotFound, Detail: "no such item"}
}

// Get returns the board item ref as who may see it: an item of another
// run, of another agent's private board or hidden by its visibility fails
// with store.ErrNotFound.
func (b *Board) Get(ctx context.Context, who store.Viewer, ref string) (store.Item, error) {
	if !strings.HasPrefix(ref, b.prefix) {
		return store.Item{}, b.hidden("get", ref)
	}
	it, err := b.s.Get(ctx, b.owner, ref)
	if err != nil {
		return store.Item{}, err
	}
	if !b.Sees(who, it.Meta) {
		return store.Item{}, b.hidden("get", ref)
	}
	return it, nil
}

// Read reads the board item ref page by page (see store.Store.Read), as
// who may see it, like Get.
func (b *Board) Read(ctx context.Context, who store.Viewer, ref string, offset, limit int64) (store.Chunk, error) {
	if !strings.HasPrefix(ref, b.prefix) {
		return store.Chunk{}, b.hidden("read", ref)
	}
	c, err := b.s.Read(ctx, b.owner, ref, offset, limit)
	if errors.Is(err, store.ErrOffset) {
		// Say nothing about the size of an item who may not see.
		if _, gerr := b.Get(ctx, who, ref); gerr != nil {
			return store.Chunk{}, gerr
		}
	}
	if err != nil {
		return store.Chunk{}, err
	}
	if !b.Sees(who, c.Meta) {
		return store.Chunk{}, b.hidden("read", ref)
	}
	return c, nil
}

// Visible returns the metadata of every board item who may see: public
// items, items scoped to who's task, and who's own private board, sorted
// by path.
func (b *Board) Visible(ctx context.Context, who store.Viewer) ([]store.Meta, error) {
	var out []store.Meta
	opts := store.ListOptions{Limit: store.MaxListLimit}
	for {
		p, err := b.s.List(ctx, b.owner, b.prefix, opts)
		if err != nil {
			return nil, err
		}
		for _, m := range p.Items {
			if b.Sees(who, m) {
				out = append(out, m)
			}
		}
		if p.Next == "" {
			return out, nil
		}
		opts.After = p.Next
	}
}
