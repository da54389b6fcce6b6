package store

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error a Store returns for one of these conditions
// wraps the matching sentinel, so callers classify with errors.Is.
var (
	// ErrNotFound: the item does not exist for this owner (or is hidden
	// from the caller by a view).
	ErrNotFound = errors.New("store: not found")
	// ErrExists: Add found an item already stored at the path.
	ErrExists = errors.New("store: already exists")
	// ErrConflict: a write was based on a revision that is no longer the
	// current one and could not be merged. The error is a *ConflictError.
	ErrConflict = errors.New("store: revision conflict")
	// ErrReadOnly: a write through a read-only store or view.
	ErrReadOnly = errors.New("store: read-only")
	// ErrForbidden: a path outside the prefixes a view is bound to.
	ErrForbidden = errors.New("store: outside the view")
	// ErrInvalidPath: a malformed path.
	ErrInvalidPath = errors.New("store: invalid path")
	// ErrInvalid: a malformed argument other than the path (metadata,
	// content, owner, query, revision).
	ErrInvalid = errors.New("store: invalid argument")
	// ErrNoMatch: a search-and-replace edit whose search text does not
	// occur in the item.
	ErrNoMatch = errors.New("store: search text not found")
	// ErrAmbiguous: a search-and-replace edit whose search text occurs more
	// than once in the item.
	ErrAmbiguous = errors.New("store: search text occurs more than once")
	// ErrOffset: a read at an offset beyond the end of the item.
	ErrOffset = errors.New("store: offset beyond end")
)

// PathError records a failed operation on one item: what was attempted,
// for which owner, on which path, and why.
type PathError struct {
	Op     string // "get", "read", "add", "edit", "delete", "list", "search"
	Owner  string
	Path   string
	Detail string // what was wrong, in words; may be empty
	Err    error  // the cause, usually one of the sentinel errors
}

// Error says what failed, where, for whom and why.
func (e *PathError) Error() string {
	var b strings.Builder
	b.WriteString("store: ")
	b.WriteString(e.Op)
	if e.Path != "" {
		fmt.Fprintf(&b, " %q", e.Path)
	}
	if e.Owner != "" {
		fmt.Fprintf(&b, " (owner %q)", e.Owner)
	}
	b.WriteString(": ")
	switch {
	case e.Detail != "":
		b.WriteString(e.Detail)
	case e.Err != nil:
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "store: "))
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *PathError) Unwrap() error { return e.Err }

// ConflictError reports a write based on a stale revision that could not be
// applied. It matches ErrConflict with errors.Is. Current and Content let
// the caller redo its change on the current state.
type ConflictError struct {
	Op       string // "edit" or "delete"
	Owner    string
	Path     string
	Revision int64    // the revision the write was based on
	Current  int64    // the item's current revision
	Content  string   // the item's current content
	Fields   []string // for JSON items: top-level fields changed on both sides
	Reason   string   // why no merge was possible, when it was not a field clash
}

// Error names the item and both revisions, and the clashing fields.
func (e *ConflictError) Error() string {
	msg := fmt.Sprintf("store: %s %q (owner %q): revision conflict: based on revision %d, current is %d",
		e.Op, e.Path, e.Owner, e.Revision, e.Current)
	if len(e.Fields) > 0 {
		msg += "; fields changed on both sides: " + strings.Join(e.Fields, ", ")
	}
	if e.Reason != "" {
		msg += "; " + e.Reason
	}
	return msg
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
