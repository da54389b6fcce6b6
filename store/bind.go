package store

import (
	"context"
	"errors"
	"math"
	"strings"
)

// View is a Store bound to one owner, as handed to an agent: the owner is
// fixed, and the view may be limited to path prefixes, to the items a
// Viewer may see, and to reading. Views are safe for concurrent use.
type View interface {
	// Owner returns the owner the view is bound to.
	Owner() string
	List(ctx context.Context, prefix string, opts ListOptions) (Page, error)
	Read(ctx context.Context, path string, offset, limit int64) (Chunk, error)
	Search(ctx context.Context, query string, opts SearchOptions) ([]Hit, error)
	Get(ctx context.Context, path string) (Item, error)
	Add(ctx context.Context, path, content string, attrs Attrs) (Meta, error)
	Edit(ctx context.Context, path string, e Edit) (Meta, error)
	Delete(ctx context.Context, path string, revision int64) error
}

// BindOption limits a View.
type BindOption func(*view)

// BindPrefixes limits a view to paths that start with one of prefixes.
// Any other path fails with ErrForbidden, and listings and searches leave
// such items out.
func BindPrefixes(prefixes ...string) BindOption {
	return func(v *view) { v.prefixes = append(v.prefixes, prefixes...) }
}

// BindViewer limits a view to the items w may see (Visibility.Allows):
// every other item behaves as if it did not exist (ErrNotFound).
func BindViewer(w Viewer) BindOption {
	return func(v *view) { v.viewer = &w }
}

// BindReadOnly makes a view refuse writes with ErrReadOnly.
func BindReadOnly() BindOption {
	return func(v *view) { v.readOnly = true }
}

// Bind returns a view of s fixed to owner and limited by opts.
func Bind(s Store, owner string, opts ...BindOption) View {
	v := &view{s: s, owner: owner}
	for _, o := range opts {
		o(v)
	}
	return v
}

type view struct {
	s        Store
	owner    string
	prefixes []string
	viewer   *Viewer
	readOnly bool
}

func (v *view) Owner() string { return v.owner }

func (v *view) inScope(path string) bool {
	if len(v.prefixes) == 0 {
		return true
	}
	for _, p := range v.prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

func (v *view) sees(m Meta) bool {
	return v.inScope(m.Path) && (v.viewer == nil || m.Visibility.Allows(*v.viewer))
}

func (v *view) forbidden(op, path string) error {
	return &PathError{Op: op, Owner: v.owner, Path: path, Err: ErrForbidden,
		Detail: "path is outside this view (allowed prefixes: " + strings.Join(v.prefixes, ", ") + ")"}
}

func (v *view) hidden(op, path string) error {
	return &PathError{Op: op, Owner: v.owner, Path: path, Err: ErrNotFound, Detail: "no such item"}
}

// check returns the error for a path outside the view or a write to a
// read-only view.
func (v *view) check(op, path string, write bool) error {
	if write && v.readOnly {
		return &PathError{Op: op, Owner: v.owner, Path: path, Err: ErrReadOnly, Detail: "this view is read-only"}
	}
	if !v.inScope(path) {
		return v.forbidden(op, path)
	}
	return nil
}

func (v *view) List(ctx context.Context, prefix string, opts ListOptions) (Page, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	var out Page
	after := opts.After
	for {
		p, err := v.s.List(ctx, v.owner, prefix, ListOptions{Limit: limit, After: after})
		if err != nil {
			return Page{}, err
		}
		for _, m := range p.Items {
			if !v.sees(m) {
				continue
			}
			out.Items = append(out.Items, m)
			if len(out.Items) == limit {
				out.Next = m.Path
				return out, nil
			}
		}
		if p.Next == "" {
			return out, nil
		}
		after = p.Next
	}
}

func (v *view) Read(ctx context.Context, path string, offset, limit int64) (Chunk, error) {
	if err := v.check("read", path, false); err != nil {
		return Chunk{}, err
	}
	c, err := v.s.Read(ctx, v.owner, path, offset, limit)
	if errors.Is(err, ErrOffset) && v.viewer != nil {
		// Say nothing about the size of an item the viewer may not see.
		if _, gerr := v.Get(ctx, path); gerr != nil {
			return Chunk{}, gerr
		}
	}
	if err != nil {
		return Chunk{}, err
	}
	if !v.sees(c.Meta) {
		return Chunk{}, v.hidden("read", path)
	}
	return c, nil
}

func (v *view) Search(ctx context.Context, query string, opts SearchOptions) ([]Hit, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	hits, err := v.s.Search(ctx, v.owner, query, SearchOptions{Prefix: opts.Prefix, Limit: math.MaxInt32})
	if err != nil {
		return nil, err
	}
	out := hits[:0]
	for _, h := range hits {
		if v.sees(h.Meta) {
			out = append(out, h)
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (v *view) Get(ctx context.Context, path string) (Item, error) {
	if err := v.check("get", path, false); err != nil {
		return Item{}, err
	}
	it, err := v.s.Get(ctx, v.owner, path)
	if err != nil {
		return Item{}, err
	}
	if !v.sees(it.Meta) {
		return Item{}, v.hidden("get", path)
	}
	return it, nil
}

func (v *view) Add(ctx context.Context, path, content string, attrs Attrs) (Meta, error) {
	if err := v.check("add", path, true); err != nil {
		return Meta{}, err
	}
	return v.s.Add(ctx, v.owner, path, content, attrs)
}

// visibleForWrite reports a hidden item as not found before a write.
func (v *view) visibleForWrite(ctx context.Context, op, path string) error {
	if v.viewer == nil {
		return nil
	}
	it, err := v.s.Get(ctx, v.owner, path)
	if err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			pe.Op = op
		}
		return err
	}
	if !v.sees(it.Meta) {
		return v.hidden(op, path)
	}
	return nil
}

func (v *view) Edit(ctx context.Context, path string, e Edit) (Meta, error) {
	if err := v.check("edit", path, true); err != nil {
		return Meta{}, err
	}
	if err := v.visibleForWrite(ctx, "edit", path); err != nil {
		return Meta{}, err
	}
	return v.s.Edit(ctx, v.owner, path, e)
}

func (v *view) Delete(ctx context.Context, path string, revision int64) error {
	if err := v.check("delete", path, true); err != nil {
		return err
	}
	if err := v.visibleForWrite(ctx, "delete", path); err != nil {
		return err
	}
	return v.s.Delete(ctx, v.owner, path, revision)
}
