// Package postgres is a graph.Saver that keeps checkpoints in PostgreSQL,
// through a pgx v5 connection pool. Several processes can share one
// database, so any replica of a server can resume any thread.
//
// Open connects and creates the schema; New wraps a pool the caller owns,
// which the store and trace backends can share, and creates the schema on
// first use or by Migrate. The tables (checkpoints, checkpoint_heads,
// checkpoint_blobs, checkpoint_tasks and checkpoint_schema, which records
// the migrations applied) live in one PostgreSQL schema: the connection's
// current schema, or the one named with WithSchema, which is created if
// needed. Creating and upgrading the tables takes a transaction-scoped
// advisory lock, so processes that start at once do it one after the
// other; a schema written by a newer version of this package is refused
// with ErrSchemaTooNew.
//
// Every write is one round trip and atomic: PutCheckpoint is one statement
// that stores the checkpoint and its blobs and moves its namespace's head
// only while the head is the checkpoint the writer expects (under the
// head's row lock, so two servers on one database cannot both advance a
// thread from the same checkpoint; after a namespace's first checkpoint the
// statement is a call of the schema's function put_checkpoint_after, whose
// plan the server makes once per connection); PutTaskRecords is one statement and
// DeleteThread one batch, which PostgreSQL runs as one implicit
// transaction. Text columns
// that order results use the "C" collation, so the order is bytewise
// whatever the database's locale. Timestamps are kept to the microsecond,
// in UTC.
//
//	s, err := postgres.Open(ctx, "postgres://coorflow@db/coorflow")
//	if err != nil {
//		return err
//	}
//	defer s.Close()
package postgres
