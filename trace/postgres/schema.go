package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrSchemaTooNew is returned when the tables were created by a newer
// version of this package, whose schema this version does not know.
var ErrSchemaTooNew = errors.New("postgres: trace schema is newer than this version supports")

// migrations[v-1] brings the schema from version v-1 to v; "{schema}"
// stands for the quoted schema name. Append to it; never edit a migration
// that has been released.
var migrations = [][]string{
	{
		`CREATE TABLE {schema}.trace_runs (
			run_id       text COLLATE "C" PRIMARY KEY,
			thread_id    text NOT NULL,
			graph_thread text NOT NULL,
			workflow     text NOT NULL,
			graph        text NOT NULL,
			owner        text NOT NULL,
			status       text NOT NULL,
			start_kind   text NOT NULL,
			input        bytea,
			runtime      bytea,
			started      timestamptz NOT NULL,
			ended        timestamptz,
			final_state  bytea,
			error        text NOT NULL,
			events       bigint NOT NULL
		)`,
		`CREATE INDEX trace_runs_by_start ON {schema}.trace_runs (started DESC, run_id DESC)`,
		`CREATE TABLE {schema}.trace_events (
			run_id      text COLLATE "C" NOT NULL REFERENCES {schema}.trace_runs (run_id) ON DELETE CASCADE,
			seq         bigint NOT NULL,
			kind        text COLLATE "C" NOT NULL,
			path        text COLLATE "C" NOT NULL,
			node        text NOT NULL,
			step        bigint NOT NULL,
			attempt     bigint NOT NULL,
			at          timestamptz NOT NULL,
			duration_ns bigint NOT NULL,
			agent       text NOT NULL,
			payload     bytea,
			error       text NOT NULL,
			hash        text NOT NULL,
			request     bytea,
			response    bytea,
			PRIMARY KEY (run_id, seq)
		)`,
	},
}

// migrate creates the schema if needed and applies the migrations it
// lacks, in one transaction that holds an advisory lock named for the
// schema, so that processes starting at once apply each migration once.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	quoted := pgx.Identifier{schema}.Sanitize()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "coorflow/trace:"+schema); err != nil {
		return fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	for _, stmt := range []string{
		`CREATE SCHEMA IF NOT EXISTS ` + quoted,
		`CREATE TABLE IF NOT EXISTS ` + quoted + `.trace_schema (version integer PRIMARY KEY)`,
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("postgres: migrate: %w", err)
		}
	}
	var version int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+quoted+`.trace_schema`).Scan(&version); err != nil {
		return fmt.Errorf("postgres: migrate: read schema version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("%w: schema %s is at version %d, this package knows up to %d", ErrSchemaTooNew, schema, version, len(migrations))
	}
	for v := version + 1; v <= len(migrations); v++ {
		for _, stmt := range migrations[v-1] {
			if _, err := tx.Exec(ctx, strings.ReplaceAll(stmt, "{schema}", quoted)); err != nil {
				return fmt.Errorf("postgres: migrate to version %d: %w", v, err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+quoted+`.trace_schema (version) VALUES ($1)`, v); err != nil {
			return fmt.Errorf("postgres: migrate to version %d: %w", v, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: commit: %w", err)
	}
	return nil
}
