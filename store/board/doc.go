// Package board is coorflow's use of a store.Store: the namespaces it
// writes, the prompt metadata of items, the mission board of each run, the
// retention of old runs, and warnings about items too large for every
// prompt. It works through the store's generic API, so it behaves the same
// over every backend.
//
// # Namespaces
//
//	project/   facts about the project: config, conventions, sources
//	memory/    long-term memory; archived transcripts under memory/transcripts/<run-id>/
//	mission/   mission boards, one per run: mission/<run-id>/
//	team/      the agents (team/agents/), cached meta-prompts, notes a team shares
//
// # Prompt metadata
//
// Prompt says how an item reaches a model: its priority (critical, high,
// normal, low), trust (system, user, model, tool), sensitivity (public,
// internal, secret) and trigger (always: loaded into prompts; index:
// listed for the model to pick; search: found only by search). It is kept
// in the item's labels (Prompt.Labels, PromptOf); a label an item lacks
// reads as its default. WarnLarge wraps a store so that a write leaving an
// always-loaded item above a size limit is reported to a callback.
//
// # Mission boards
//
// Board is the mission board of one run, under mission/<run-id>/:
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
//
// # Retention
//
// Prune removes the mission boards and archived transcripts of runs that
// are older than a policy's age or beyond its newest runs, deleting each
// item at the revision it listed, so nothing written since is lost.
package board
