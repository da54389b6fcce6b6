package store

import "context"

// Backend is the storage a Store is built on with New. Backends keep rows;
// New does everything else (validation, revisions, merges, search ranking,
// size warnings, retention), so every backend behaves the same.
//
// A Backend returns errors wrapping ErrNotFound and ErrExists where its
// methods say so; every other error is passed on to the caller wrapped in
// a *PathError. Owner and path arguments are already validated. Methods are
// safe for concurrent use.
type Backend interface {
	// Get returns the current item at path, or an error wrapping
	// ErrNotFound.
	Get(ctx context.Context, owner, path string) (Item, error)

	// ReadRange returns the item's metadata and at most n bytes of its
	// content starting at byte offset (fewer, possibly none, near or past
	// the end), or an error wrapping ErrNotFound.
	ReadRange(ctx context.Context, owner, path string, offset, n int64) (Meta, string, error)

	// List returns the metadata of items whose path starts with prefix and
	// sorts after after (byte order), sorted by path, at most limit of them
	// (limit > 0).
	List(ctx context.Context, owner, prefix, after string, limit int) ([]Meta, error)

	// Match returns the items under prefix whose path or content contains
	// at least one of terms, compared case-insensitively. terms are already
	// lower case. It may return items that do not match (New ranks and
	// filters again) but must not miss one that does.
	Match(ctx context.Context, owner, prefix string, terms []string) ([]Item, error)

	// Update runs fn in a transaction over the owner's items. Updates of
	// the same item are serialized: between fn's Tx.Get of a path and the
	// commit, no other transaction changes that path. If fn returns an
	// error, nothing it did is kept and Update returns that error as is.
	Update(ctx context.Context, owner string, fn func(Tx) error) error
}

// Tx is the view of one Backend transaction. Its methods are called only
// from the goroutine running Update's fn, with Update's context or one
// derived from it.
type Tx interface {
	// Get returns the current item at path, or an error wrapping
	// ErrNotFound, and locks it until the transaction ends.
	Get(ctx context.Context, path string) (Item, error)

	// Insert stores a new item, or returns an error wrapping ErrExists.
	Insert(ctx context.Context, it Item) error

	// Replace stores it over the item at the same path, which exists.
	Replace(ctx context.Context, it Item) error

	// Delete removes the item at path, and every past revision kept for
	// it. Deleting a missing item is not an error.
	Delete(ctx context.Context, path string) error

	// PutPast keeps the content of a past revision of the item at path.
	PutPast(ctx context.Context, path string, revision int64, content string) error

	// Past returns the content kept for a past revision, or an error
	// wrapping ErrNotFound.
	Past(ctx context.Context, path string, revision int64) (string, error)

	// DropPast forgets the past revisions of path below revision.
	DropPast(ctx context.Context, path string, below int64) error
}
