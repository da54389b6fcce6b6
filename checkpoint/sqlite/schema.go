package sqlite

import (
	"context"
	"database/sql"
	"errors"

	dbmigrate "github.com/coorflow/coorflow/internal/migrate"
)

// ErrSchemaTooNew is returned when the database was written by a newer
// version of this package, whose schema this version does not know.
var ErrSchemaTooNew = errors.New("sqlite: checkpoint schema is newer than this version supports")

// migrations[v-1] brings the schema from version v-1 to v. Append to it;
// never edit a migration that has been released.
//
// A PutCheckpoint touches three B-trees: the checkpoints table, its id
// index and the namespace's head; and a fourth, the blobs table, only for
// blobs that cannot go in the checkpoint's row (see inline.go). Each is at
// least one page written to the WAL per commit (about two for the trees
// keyed by thread, whose inserts fall in the middle), so the schema has no
// index that writing does not need.
var migrations = [][]string{
	{
		// seq is the rowid: it orders checkpoints by when they were stored.
		`CREATE TABLE checkpoints (
			seq           INTEGER PRIMARY KEY,
			thread_id     TEXT    NOT NULL,
			ns            TEXT    NOT NULL,
			checkpoint_id TEXT    NOT NULL,
			parent_id     TEXT    NOT NULL,
			step          INTEGER NOT NULL,
			source        TEXT    NOT NULL,
			created_us    INTEGER NOT NULL,
			meta          BLOB    NOT NULL
		)`,
		`CREATE UNIQUE INDEX checkpoints_by_id ON checkpoints (thread_id, ns, checkpoint_id)`,
		// The newest checkpoint and the counts of each namespace of each
		// thread, kept by a trigger so that finding the newest checkpoint
		// and listing threads read a few rows rather than every checkpoint.
		`CREATE TABLE checkpoint_heads (
			thread_id   TEXT    NOT NULL,
			ns          TEXT    NOT NULL,
			last_seq    INTEGER NOT NULL,
			checkpoints INTEGER NOT NULL,
			created_us  INTEGER NOT NULL,
			updated_us  INTEGER NOT NULL,
			PRIMARY KEY (thread_id, ns)
		) WITHOUT ROWID`,
		`CREATE TRIGGER checkpoints_head AFTER INSERT ON checkpoints BEGIN
			INSERT INTO checkpoint_heads (thread_id, ns, last_seq, checkpoints, created_us, updated_us)
			VALUES (new.thread_id, new.ns, new.seq, 1, new.created_us, new.created_us)
			ON CONFLICT (thread_id, ns) DO UPDATE SET
				last_seq    = excluded.last_seq,
				checkpoints = checkpoints + 1,
				created_us  = min(created_us, excluded.created_us),
				updated_us  = max(updated_us, excluded.updated_us);
		END`,
		`CREATE TABLE checkpoint_blobs (
			thread_id TEXT NOT NULL,
			ns        TEXT NOT NULL,
			channel   TEXT NOT NULL,
			version   TEXT NOT NULL,
			base      TEXT NOT NULL,
			data      BLOB NOT NULL,
			PRIMARY KEY (thread_id, ns, channel, version)
		) WITHOUT ROWID`,
		`CREATE TABLE checkpoint_tasks (
			thread_id     TEXT NOT NULL,
			ns            TEXT NOT NULL,
			checkpoint_id TEXT NOT NULL,
			task_id       TEXT NOT NULL,
			kind          TEXT NOT NULL,
			key           TEXT NOT NULL,
			data          BLOB NOT NULL,
			PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, kind, key),
			FOREIGN KEY (thread_id, ns, checkpoint_id)
				REFERENCES checkpoints (thread_id, ns, checkpoint_id) ON DELETE CASCADE
		) WITHOUT ROWID`,
	},
	{
		// The blobs a checkpoint introduces, when their version is its id
		// and their data small, as a JSON object: channel -> [base, data
		// in hex]. NULL when it has none; rows of version 1 have none.
		`ALTER TABLE checkpoints ADD COLUMN blobs TEXT`,
	},
}

// migrate creates or upgrades the schema on conn (see migrate.SQLite).
func migrate(ctx context.Context, conn *sql.Conn) error {
	return dbmigrate.SQLite(ctx, conn, "checkpoint_schema", migrations, ErrSchemaTooNew)
}
