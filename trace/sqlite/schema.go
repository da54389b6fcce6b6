package sqlite

import (
	"context"
	"database/sql"
	"errors"

	dbmigrate "github.com/coorflow/coorflow/internal/migrate"
)

// ErrSchemaTooNew is returned when the database was written by a newer
// version of this package, whose schema this version does not know.
var ErrSchemaTooNew = errors.New("sqlite: trace schema is newer than this version supports")

// migrations[v-1] brings the schema from version v-1 to v. Append to it;
// never edit a migration that has been released.
var migrations = [][]string{
	{
		`CREATE TABLE trace_runs (
			run_id       TEXT    NOT NULL PRIMARY KEY,
			thread_id    TEXT    NOT NULL,
			graph_thread TEXT    NOT NULL,
			workflow     TEXT    NOT NULL,
			graph        TEXT    NOT NULL,
			owner        TEXT    NOT NULL,
			status       TEXT    NOT NULL,
			start_kind   TEXT    NOT NULL,
			input        BLOB,
			runtime      BLOB,
			started_us   INTEGER NOT NULL,
			ended_us     INTEGER,
			final_state  BLOB,
			error        TEXT    NOT NULL,
			events       INTEGER NOT NULL
		)`,
		`CREATE INDEX trace_runs_by_start ON trace_runs (started_us, run_id)`,
		// Rows can be large (snapshots, model requests), so the table keeps
		// its rowid and the (run, seq) key is an index.
		`CREATE TABLE trace_events (
			id          INTEGER PRIMARY KEY,
			run_id      TEXT    NOT NULL,
			seq         INTEGER NOT NULL,
			kind        TEXT    NOT NULL,
			path        TEXT    NOT NULL,
			node        TEXT    NOT NULL,
			step        INTEGER NOT NULL,
			attempt     INTEGER NOT NULL,
			time_us     INTEGER NOT NULL,
			duration_ns INTEGER NOT NULL,
			agent       TEXT    NOT NULL,
			payload     BLOB,
			error       TEXT    NOT NULL,
			hash        TEXT    NOT NULL,
			request     BLOB,
			response    BLOB
		)`,
		`CREATE UNIQUE INDEX trace_events_by_seq ON trace_events (run_id, seq)`,
	},
}

// migrate applies the migrations the database lacks, in one transaction
// on the writer connection (see migrate.SQLite).
func migrate(ctx context.Context, c *sql.Conn) error {
	return dbmigrate.SQLite(ctx, c, "trace_schema", migrations, ErrSchemaTooNew)
}
