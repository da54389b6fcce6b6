package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/coorflow/coorflow/store"
)

// New returns an empty in-memory Store configured by cfg.
func New(cfg store.Config) store.Store {
	return store.New(NewBackend(), cfg)
}

// NewBackend returns an empty in-memory store.Backend, for building a
// Store with store.New around a wrapped backend.
func NewBackend() store.Backend {
	return &backend{owners: map[string]*ownerData{}}
}

// backend implements store.Backend with maps guarded by one RWMutex.
type backend struct {
	mu     sync.RWMutex
	owners map[string]*ownerData
}

type ownerData struct {
	items map[string]store.Item
	past  map[string]map[int64]string // path -> revision -> content
}

func notFound(path string) error { return fmt.Errorf("memory: %q: %w", path, store.ErrNotFound) }

// detach returns it with labels of its own, so that a caller's map and a
// stored item's never alias.
func detach(it store.Item) store.Item {
	it.Labels = maps.Clone(it.Labels)
	return it
}

// get returns the committed item; the caller holds mu.
func (b *backend) get(owner, path string) (store.Item, error) {
	d := b.owners[owner]
	if d == nil {
		return store.Item{}, notFound(path)
	}
	it, ok := d.items[path]
	if !ok {
		return store.Item{}, notFound(path)
	}
	return detach(it), nil
}

func (b *backend) Get(ctx context.Context, owner, path string) (store.Item, error) {
	if err := ctx.Err(); err != nil {
		return store.Item{}, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.get(owner, path)
}

func (b *backend) ReadRange(ctx context.Context, owner, path string, offset, n int64) (store.Meta, string, error) {
	it, err := b.Get(ctx, owner, path)
	if err != nil {
		return store.Meta{}, "", err
	}
	c := it.Content
	if offset >= int64(len(c)) {
		return it.Meta, "", nil
	}
	end := min(offset+n, int64(len(c)))
	return it.Meta, c[offset:end], nil
}

// scan returns the items under prefix sorted by path, with keep deciding
// which to include; the caller holds mu.
func (b *backend) scan(owner, prefix string, keep func(store.Item) bool) []store.Item {
	d := b.owners[owner]
	if d == nil {
		return nil
	}
	var out []store.Item
	for p, it := range d.items {
		if strings.HasPrefix(p, prefix) && keep(it) {
			out = append(out, detach(it))
		}
	}
	slices.SortFunc(out, func(a, b store.Item) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func (b *backend) List(ctx context.Context, owner, prefix, after string, limit int) ([]store.Meta, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.RLock()
	items := b.scan(owner, prefix, func(it store.Item) bool { return it.Path > after })
	b.mu.RUnlock()
	if len(items) > limit {
		items = items[:limit]
	}
	metas := make([]store.Meta, len(items))
	for i, it := range items {
		metas[i] = it.Meta
	}
	return metas, nil
}

func (b *backend) Match(ctx context.Context, owner, prefix string, terms []string) ([]store.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.scan(owner, prefix, func(it store.Item) bool {
		p, c := strings.ToLower(it.Path), strings.ToLower(it.Content)
		for _, t := range terms {
			if strings.Contains(p, t) || strings.Contains(c, t) {
				return true
			}
		}
		return false
	}), nil
}

func (b *backend) Update(ctx context.Context, owner string, fn func(store.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.owners[owner]
	if d == nil {
		d = &ownerData{items: map[string]store.Item{}, past: map[string]map[int64]string{}}
		b.owners[owner] = d
	}
	t := &tx{d: d}
	committed := false
	defer func() {
		if !committed {
			t.rollback()
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	committed = true
	return nil
}

// tx applies changes directly, under the backend's write lock, and keeps
// an undo log to roll them back when fn fails.
type tx struct {
	d    *ownerData
	undo []func()
}

func (t *tx) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
}

func (t *tx) setItem(path string, it *store.Item) {
	old, had := t.d.items[path]
	t.undo = append(t.undo, func() {
		if had {
			t.d.items[path] = old
		} else {
			delete(t.d.items, path)
		}
	})
	if it == nil {
		delete(t.d.items, path)
	} else {
		t.d.items[path] = detach(*it)
	}
}

func (t *tx) setPast(path string, revs map[int64]string) {
	old, had := t.d.past[path]
	t.undo = append(t.undo, func() {
		if had {
			t.d.past[path] = old
		} else {
			delete(t.d.past, path)
		}
	})
	if revs == nil {
		delete(t.d.past, path)
	} else {
		t.d.past[path] = revs
	}
}

func (t *tx) Get(ctx context.Context, path string) (store.Item, error) {
	it, ok := t.d.items[path]
	if !ok {
		return store.Item{}, notFound(path)
	}
	return detach(it), nil
}

func (t *tx) Insert(ctx context.Context, it store.Item) error {
	if _, ok := t.d.items[it.Path]; ok {
		return fmt.Errorf("memory: %q: %w", it.Path, store.ErrExists)
	}
	t.setItem(it.Path, &it)
	return nil
}

func (t *tx) Replace(ctx context.Context, it store.Item) error {
	if _, ok := t.d.items[it.Path]; !ok {
		return notFound(it.Path)
	}
	t.setItem(it.Path, &it)
	return nil
}

func (t *tx) Delete(ctx context.Context, path string) error {
	t.setItem(path, nil)
	t.setPast(path, nil)
	return nil
}

func (t *tx) PutPast(ctx context.Context, path string, revision int64, content string) error {
	revs := make(map[int64]string, len(t.d.past[path])+1)
	for r, c := range t.d.past[path] {
		revs[r] = c
	}
	revs[revision] = content
	t.setPast(path, revs)
	return nil
}

func (t *tx) Past(ctx context.Context, path string, revision int64) (string, error) {
	c, ok := t.d.past[path][revision]
	if !ok {
		return "", fmt.Errorf("memory: %q revision %d: %w", path, revision, store.ErrNotFound)
	}
	return c, nil
}

func (t *tx) DropPast(ctx context.Context, path string, below int64) error {
	old := t.d.past[path]
	if len(old) == 0 {
		return nil
	}
	revs := make(map[int64]string, len(old))
	for r, c := range old {
		if r >= below {
			revs[r] = c
		}
	}
	if len(revs) == len(old) {
		return nil
	}
	if len(revs) == 0 {
		revs = nil
	}
	t.setPast(path, revs)
	return nil
}
