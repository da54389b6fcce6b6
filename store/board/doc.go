// Package board is the mission board of a run, kept in any store.Store
// under mission/<run-id>/:
//
//	plan                          the plan (JSON; edits of different fields merge)
//	progress                      one line per progress note
//	decisions                     the decisions taken (JSON array)
//	handoffs/<from>-<to>          what one agent hands to another
//	outputs/<name>                full outputs, read back page by page by reference
//	agents/<agent-run-id>/<name>  each agent's private board
//
// Reads take the caller's identity, a store.Viewer (task id and agent run
// id): an agent never sees another agent's private board, nor an item
// whose visibility label excludes it — to it, such items do not exist
// (store.ErrNotFound). Visible lists exactly what a viewer may see.
//
// In handoff paths, "-" and "%" inside an id are written %2D and %25, so
// that every (from, to) pair has its own path.
package board
