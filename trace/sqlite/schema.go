package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
// on the writer connection.
func migrate(ctx context.Context, c *sql.Conn) (err error) {
	if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	defer func() {
		if err != nil {
			_, _ = c.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS trace_schema (version INTEGER PRIMARY KEY)`); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	var version int
	if err := c.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM trace_schema`).Scan(&version); err != nil {
		return fmt.Errorf("sqlite: migrate: read schema version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("%w: the database is at version %d, this package knows up to %d", ErrSchemaTooNew, version, len(migrations))
	}
	for v := version + 1; v <= len(migrations); v++ {
		for _, stmt := range migrations[v-1] {
			if _, err := c.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("sqlite: migrate to version %d: %w", v, err)
			}
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO trace_schema (version) VALUES (?)`, v); err != nil {
			return fmt.Errorf("sqlite: migrate to version %d: %w", v, err)
		}
	}
	if _, err := c.ExecContext(ctx, `COMMIT`); err != nil {
		return fmt.Errorf("sqlite: migrate: commit: %w", err)
	}
	return nil
}
