package store

import (
	"context"
)

// Store holds namespaced items for many owners. Every method takes the
// owner id first after the context; an item stored for one owner does not
// exist for any other. Implementations are safe for concurrent use.
//
// The backends in store/memory, store/sqlite and store/postgres all
// implement Store through New and pass the suite in store/storetest.
type Store interface {
	// List returns the metadata of the owner's items whose path starts with
	// prefix ("" for all), in byte order of path, one page at a time.
	List(ctx context.Context, owner, prefix string, opts ListOptions) (Page, error)

	// Read returns up to limit bytes of an item's content from a byte
	// offset. An offset equal to the size returns an empty chunk at EOF; a
	// larger offset fails with ErrOffset.
	Read(ctx context.Context, owner, path string, offset, limit int64) (Chunk, error)

	// Search returns the owner's items whose path or content contains
	// enough of the query's terms, best first (BM25). A query's terms are
	// its words, lower-cased, without stop words and words under three
	// letters (unless it has no others); a hit contains at least 30% of
	// them, rounded up.
	Search(ctx context.Context, owner, query string, opts SearchOptions) ([]Hit, error)

	// Get returns an item's content and metadata.
	Get(ctx context.Context, owner, path string) (Item, error)

	// Add stores a new item at revision 1. It fails with ErrExists when an
	// item is already stored at path.
	Add(ctx context.Context, owner, path, content string, attrs Attrs) (Meta, error)

	// Edit changes an item's content (and, optionally, its attributes) and
	// returns its new metadata. The edit carries the revision it was based
	// on; see Edit for how a stale revision is handled.
	Edit(ctx context.Context, owner, path string, e Edit) (Meta, error)

	// Delete removes an item stored at the given revision. A stale revision
	// fails with a *ConflictError.
	Delete(ctx context.Context, owner, path string, revision int64) error
}

// DefaultListLimit is the page size of List when ListOptions.Limit is 0.
const DefaultListLimit = 100

// MaxListLimit caps ListOptions.Limit.
const MaxListLimit = 1000

// ListOptions selects a page of List.
type ListOptions struct {
	// Limit is the most items returned; 0 means DefaultListLimit. Values
	// above MaxListLimit are lowered to it.
	Limit int
	// After continues a listing: only paths sorting after it are returned.
	// Pass the Next of the previous page.
	After string
}

// Page is one page of a listing.
type Page struct {
	Items []Meta
	// Next is the cursor for the following page, or "" when this page is
	// the last one.
	Next string
}

// DefaultReadLimit is the chunk size of Read when its limit is 0 or less.
const DefaultReadLimit = 16 << 10

// Chunk is a slice of an item's content, returned by Read, with the
// metadata of the revision it was read from.
type Chunk struct {
	Meta
	Content string
	Offset  int64 // where Content starts
	Next    int64 // where the next Read should start; always on a character boundary
	EOF     bool  // Content reaches the end of the item
}

// DefaultSearchLimit is the number of hits Search returns when
// SearchOptions.Limit is 0.
const DefaultSearchLimit = 20

// SearchOptions narrows a search.
type SearchOptions struct {
	// Prefix restricts the search to paths that start with it.
	Prefix string
	// Limit is the most hits returned; 0 means DefaultSearchLimit.
	Limit int
}

// Hit is one search result.
type Hit struct {
	Meta
	// Matches counts the occurrences of the query's terms in the path and
	// the content.
	Matches int
	// Score ranks the hit (higher is better): BM25 over the items that
	// matched, with a small bonus for recently updated items.
	Score float64
	// Snippet is a short excerpt of the content around the first match
	// (empty when only the path matched).
	Snippet string
}
