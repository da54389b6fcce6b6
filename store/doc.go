// Package store is a generic store of namespaced, versioned documents for
// many owners: list, read page by page, search, add, edit with
// compare-and-swap and delete. It is coorflow's context store; what the
// documents mean to coorflow — its namespaces, the prompt metadata of each
// item, mission boards, the retention of old runs, warnings about items too
// large for every prompt — is store/board's, built on this package's API.
//
// # Items
//
// An item lives at a path <namespace>/<name>..., slash-separated segments
// whose first one is its namespace (CheckPath); the store gives no
// namespace a meaning. Items belong to an owner (a user or tenant id)
// passed to every call; an item of one owner does not exist for another.
//
// Each item carries Attrs: its visibility (public, task:<id>, agent:<id>),
// which views enforce; its content type (text or json), which decides what
// content is valid and how stale edits merge; and labels, key-value pairs
// the store keeps and returns without reading them. Beside them it has its
// size, created and updated times, and revision.
//
// # Revisions
//
// An item starts at revision 1 and every write adds one. Edit and Delete
// carry the revision the caller read; a stale revision fails with a
// *ConflictError (errors.Is(err, ErrConflict)) holding the current
// revision and content, except for JSON objects: an edit based on an older
// revision is merged field by field against that revision (the store keeps
// the last Config.KeepRevisions revisions of each JSON item) when the
// fields it changes were not changed since, and conflicts, naming the
// fields, when they were.
//
// # Backends
//
// New builds a Store over a Backend, which only keeps rows; the rules above
// live here, so store/memory, store/sqlite and store/postgres behave the
// same and pass one suite, store/storetest.
//
// Search is a case-insensitive substring match of each white-space
// separated term against path and content; hits are ranked by the number
// of matches, then by path, and carry their metadata for callers that
// rank further. It scans the owner's items under the prefix, which is fine
// for the thousands of items a run holds, not for a corpus.
//
// # Views
//
// Agents get a View from Bind: the owner is fixed, and the view can be
// limited to path prefixes (BindPrefixes), to what a Viewer may see
// (BindViewer) and to reading (BindReadOnly). ReadOnly wraps a whole Store.
package store
