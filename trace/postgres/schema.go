package postgres

import (
	"errors"

	"github.com/coorflow/coorflow/internal/pgdb"
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

// schemaMigrations are migrations with the lock and the version table
// they are applied under (see migrate.Postgres).
var schemaMigrations = pgdb.Migrations{
	Lock:   "coorflow/trace:",
	Table:  "trace_schema",
	Steps:  migrations,
	TooNew: ErrSchemaTooNew,
}
