// Package memories is what an owner's agents remember across threads: short
// texts kept in the store under memory/, found again by full-text search
// (the store's index: SQLite FTS5, PostgreSQL trigrams) and, when an
// embedder is configured, by the similarity of their embeddings, the two
// rankings fused.
//
// Memories belong to an owner like every store item: inside a run the
// owner is the run's (store.RuntimeOwner), so one owner never recalls
// another's. Agents write and read them with the remember and recall
// tools; the planner recalls what earlier threads learned about a new
// request; the team remembers the summary of each step it completes.
// Every size is bounded: a memory's text, the memories an owner keeps (the
// oldest go first), the vectors compared in one recall.
package memories
