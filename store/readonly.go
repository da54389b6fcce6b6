package store

import "context"

// ReadOnly returns a Store that reads through s and refuses every write:
// Add, Edit and Delete fail with an error wrapping ErrReadOnly.
func ReadOnly(s Store) Store { return readOnly{s} }

type readOnly struct{ s Store }

func refuse(op, owner, path string) error {
	return &PathError{Op: op, Owner: owner, Path: path, Err: ErrReadOnly, Detail: "this store is read-only"}
}

func (r readOnly) List(ctx context.Context, owner, prefix string, opts ListOptions) (Page, error) {
	return r.s.List(ctx, owner, prefix, opts)
}

func (r readOnly) Read(ctx context.Context, owner, path string, offset, limit int64) (Chunk, error) {
	return r.s.Read(ctx, owner, path, offset, limit)
}

func (r readOnly) Search(ctx context.Context, owner, query string, opts SearchOptions) ([]Hit, error) {
	return r.s.Search(ctx, owner, query, opts)
}

func (r readOnly) Get(ctx context.Context, owner, path string) (Item, error) {
	return r.s.Get(ctx, owner, path)
}

func (r readOnly) Add(_ context.Context, owner, path, _ string, _ Attrs) (Meta, error) {
	return Meta{}, refuse("add", owner, path)
}

func (r readOnly) Edit(_ context.Context, owner, path string, _ Edit) (Meta, error) {
	return Meta{}, refuse("edit", owner, path)
}

func (r readOnly) Delete(_ context.Context, owner, path string, _ int64) error {
	return refuse("delete", owner, path)
}
