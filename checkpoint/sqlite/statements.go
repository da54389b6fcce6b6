package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// preparer is a *sql.DB or a *sql.Conn.
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// writeStatements are prepared on the writer connection.
type writeStatements struct {
	begin, commit, rollback *sql.Stmt
	insertCheckpoint        *sql.Stmt
	newestID                *sql.Stmt
	insertBlob              *sql.Stmt
	upsertTask              *sql.Stmt
	deleteThread            [4]*sql.Stmt
}

// readStatements are prepared on the pool; database/sql prepares each on a
// connection the first time it runs there and keeps it.
type readStatements struct {
	getCheckpoint *sql.Stmt
	getNewest     *sql.Stmt
	getSeq        *sql.Stmt
	list          *sql.Stmt
	blobs         *sql.Stmt
	blobsAt       *sql.Stmt
	tasks         *sql.Stmt
	threads       *sql.Stmt
}

// checkpointColumns are the columns scanCheckpoint reads, in order.
const checkpointColumns = `checkpoint_id, parent_id, step, source, created_us, meta`

// newestID selects the id of the newest checkpoint of a thread (the first
// parameter) in a namespace (the second).
const newestID = `SELECT c.checkpoint_id FROM checkpoint_heads h JOIN checkpoints c ON c.seq = h.last_seq
	WHERE h.thread_id = ? AND h.ns = ?`

// inlineBase and inlineData read the base and the data of a blob kept in
// a checkpoint's row, i, an entry of json_each(c.blobs) (inline.go).
const (
	inlineBase = `(i.value ->> 0)`
	inlineData = `unhex(i.value ->> 1)`
)

// tableBlob selects the row of checkpoint_blobs of the thread and
// namespace (parameters 1 and 2) with channel and version.
func tableBlob(channel, version string) string {
	return `SELECT 1 FROM checkpoint_blobs b2 WHERE b2.thread_id = ?1 AND b2.ns = ?2 AND b2.channel = ` + channel + ` AND b2.version = ` + version
}

// statement is a query and where its prepared form goes.
type statement struct {
	stmt  **sql.Stmt
	query string
}

func (st *writeStatements) all() []statement {
	out := []statement{
		{&st.begin, `BEGIN IMMEDIATE`},
		{&st.commit, `COMMIT`},
		{&st.rollback, `ROLLBACK`},
		// Inserts nothing unless the tenth parameter names the newest
		// checkpoint of the namespace the last two name ("" for none): the
		// statement holds the write lock from its start, so the check and
		// the insert are one step, also between processes. (Parameters
		// are anonymous: the driver reads the name of each numbered one on
		// every call.)
		{&st.insertCheckpoint, `INSERT INTO checkpoints
			(thread_id, ns, checkpoint_id, parent_id, step, source, created_us, meta, blobs)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?
			WHERE ? = coalesce((` + newestID + `), '')`},
		{&st.newestID, newestID},
		// Inserts nothing when the blob is stored already, in this table
		// or in the row of the checkpoint its version names (inline.go).
		{&st.insertBlob, `INSERT OR IGNORE INTO checkpoint_blobs
			(thread_id, ns, channel, version, base, data)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6
			WHERE NOT EXISTS (SELECT 1 FROM checkpoints c, json_each(c.blobs) i
				WHERE c.thread_id = ?1 AND c.ns = ?2 AND c.checkpoint_id = ?4 AND i.key = ?3)`},
		// Inserts nothing when the checkpoint does not exist. (The WHERE
		// clause also keeps ON CONFLICT from being read as a join.)
		{&st.upsertTask, `INSERT INTO checkpoint_tasks
			(thread_id, ns, checkpoint_id, task_id, kind, key, data)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
			WHERE EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3)
			ON CONFLICT (thread_id, ns, checkpoint_id, task_id, kind, key) DO UPDATE SET data = excluded.data`},
	}
	// Tasks first: their foreign key would otherwise be checked for each
	// deleted checkpoint.
	for i, table := range []string{"checkpoint_tasks", "checkpoint_blobs", "checkpoints", "checkpoint_heads"} {
		out = append(out, statement{&st.deleteThread[i], `DELETE FROM ` + table + ` WHERE thread_id = ?`})
	}
	return out
}

func (st *readStatements) all() []statement {
	return []statement{
		{&st.getCheckpoint, `SELECT ` + checkpointColumns + ` FROM checkpoints
			WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?`},
		{&st.getNewest, `SELECT ` + checkpointColumns + ` FROM checkpoints
			WHERE seq = (SELECT last_seq FROM checkpoint_heads WHERE thread_id = ? AND ns = ?)`},
		{&st.getSeq, `SELECT seq FROM checkpoints WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?`},
		// Through the id index, so that SQLite reads the namespace's rows
		// rather than walk the whole table backwards by seq. A negative
		// limit is no limit.
		{&st.list, `SELECT ` + checkpointColumns + ` FROM checkpoints INDEXED BY checkpoints_by_id
			WHERE thread_id = ? AND ns = ? AND seq < ? ORDER BY seq DESC LIMIT ?`},
		// The channels are passed as one JSON array. Blobs come from
		// checkpoint_blobs and from the rows of the checkpoints that
		// introduced them, where checkpoint_blobs has no copy (inline.go).
		{&st.blobs, `SELECT channel, version, base, data FROM checkpoint_blobs
			WHERE thread_id = ?1 AND ns = ?2 AND channel IN (SELECT value FROM json_each(?3))
			UNION ALL
			SELECT i.key, c.checkpoint_id, ` + inlineBase + `, ` + inlineData + `
			FROM checkpoints c INDEXED BY checkpoints_by_id CROSS JOIN json_each(c.blobs) i
			WHERE c.thread_id = ?1 AND c.ns = ?2 AND c.blobs IS NOT NULL
				AND i.key IN (SELECT value FROM json_each(?3))
				AND NOT EXISTS (` + tableBlob("i.key", "c.checkpoint_id") + `)`},
		// The versions are passed as one JSON object, channel -> version;
		// each blob, the first of a chain too, is a lookup of a primary
		// key or of the id index (CROSS JOIN keeps SQLite from scanning
		// the thread's blobs and matching them against the object
		// instead). Each blob is looked for in checkpoint_blobs and in the
		// row of the checkpoint its version names (inline.go). UNION (not
		// ALL) ends a cycle of a corrupt chain.
		{&st.blobsAt, `WITH RECURSIVE chain (channel, version, base, data) AS (
				SELECT b.channel, b.version, b.base, b.data FROM json_each(?3) w
				CROSS JOIN checkpoint_blobs b ON b.thread_id = ?1 AND b.ns = ?2 AND b.channel = w.key AND b.version = w.value
				UNION
				SELECT w.key, w.value, ` + inlineBase + `, ` + inlineData + ` FROM json_each(?3) w
				CROSS JOIN checkpoints c ON c.thread_id = ?1 AND c.ns = ?2 AND c.checkpoint_id = w.value
				CROSS JOIN json_each(c.blobs) i ON i.key = w.key
				WHERE NOT EXISTS (` + tableBlob("w.key", "w.value") + `)
				UNION
				SELECT b.channel, b.version, b.base, b.data FROM chain x
				CROSS JOIN checkpoint_blobs b ON b.thread_id = ?1 AND b.ns = ?2 AND b.channel = x.channel AND b.version = x.base
				WHERE x.base <> ''
				UNION
				SELECT x.channel, x.base, ` + inlineBase + `, ` + inlineData + ` FROM chain x
				CROSS JOIN checkpoints c ON c.thread_id = ?1 AND c.ns = ?2 AND c.checkpoint_id = x.base
				CROSS JOIN json_each(c.blobs) i ON i.key = x.channel
				WHERE x.base <> '' AND NOT EXISTS (` + tableBlob("x.channel", "x.base") + `)
			)
			SELECT channel, version, base, data FROM chain`},
		// One row with NULL task columns when the checkpoint has no records,
		// none when the checkpoint does not exist.
		{&st.tasks, `SELECT t.task_id, t.kind, t.key, t.data
			FROM checkpoints c LEFT JOIN checkpoint_tasks t
				ON t.thread_id = c.thread_id AND t.ns = c.ns AND t.checkpoint_id = c.checkpoint_id
			WHERE c.thread_id = ? AND c.ns = ? AND c.checkpoint_id = ?
			ORDER BY t.task_id, t.kind, t.key`},
		{&st.threads, `SELECT thread_id, sum(checkpoints), min(created_us), max(updated_us)
			FROM checkpoint_heads GROUP BY thread_id ORDER BY max(last_seq) DESC LIMIT ?`},
	}
}

// prepare prepares stmts on p; after an error none is left open.
func prepare(ctx context.Context, p preparer, stmts []statement) error {
	for _, s := range stmts {
		stmt, err := p.PrepareContext(ctx, s.query)
		if err != nil {
			return errors.Join(fmt.Errorf("sqlite: prepare statements: %w", err), closeAll(stmts))
		}
		*s.stmt = stmt
	}
	return nil
}

// closeAll closes the prepared stmts.
func closeAll(stmts []statement) error {
	var errs []error
	for _, s := range stmts {
		if *s.stmt != nil {
			errs = append(errs, (*s.stmt).Close())
			*s.stmt = nil
		}
	}
	return errors.Join(errs...)
}
