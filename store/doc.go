// Package store is coorflow's context store: namespaced, versioned
// documents that agents list, read page by page, search, add, edit and
// delete, each labelled with the metadata the context window needs to
// decide what a model sees.
//
// # Items
//
// An item lives at a path <namespace>/<name>..., slash-separated segments
// whose first one is its namespace (CheckPath); the store gives no
// namespace a meaning (coorflow's are store/board's). Items belong to an
// owner (a user or tenant id) passed to every call; an item of one owner
// does not exist for another.
//
// Each item carries Attrs — priority (critical, high, normal, low), trust
// (system, user, model, tool), sensitivity (public, internal, secret),
// trigger (always: loaded into prompts; index: listed for the model to
// pick; search: found only by search), visibility (public, task:<id>,
// agent:<id>) and content type (text or json) — plus its size, created and
// updated times, and revision.
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
// of matches, then by priority, then by path. It scans the owner's items
// under the prefix, which is fine for the thousands of items a run holds,
// not for a corpus.
//
// # Views
//
// Agents get a View from Bind: the owner is fixed, and the view can be
// limited to path prefixes (BindPrefixes), to what a Viewer may see
// (BindViewer) and to reading (BindReadOnly). ReadOnly wraps a whole Store.
//
// What the items mean to coorflow — mission boards, the retention of old
// runs, warnings about items too large for every prompt — is store/board's.
package store
