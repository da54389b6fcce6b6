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
	{
		// The events move to the runs' event log (runs/eventlog, whose
		// tables in this schema are made first): each run's are the
		// described frames of a stream keyed "trace/" and the run's id
		// (see frame.go: the kind is the frame's name, the payload its
		// bytes, the request and response its body, the rest its meta),
		// and every run of the index has its stream, which its appends
		// need. Their table goes: the event log is the one table family
		// of the runs' events.
		`INSERT INTO {schema}.event_streams AS s (stream, last)
			SELECT 'trace/' || r.run_id, coalesce(max(e.seq), 0)
			FROM {schema}.trace_runs r LEFT JOIN {schema}.trace_events e USING (run_id) GROUP BY r.run_id
			ON CONFLICT (stream) DO UPDATE SET last = greatest(s.last, excluded.last)`,
		`INSERT INTO {schema}.event_frames (stream, id, name, frame, path, meta, body)
			SELECT 'trace/' || run_id, seq, kind, coalesce(payload, ''), path,
				jsonb_strip_nulls(jsonb_build_object(
					'node', nullif(node, ''), 'step', nullif(step, 0), 'attempt', nullif(attempt, 0),
					'at', (extract(epoch FROM at) * 1000000)::bigint, 'duration', nullif(duration_ns, 0),
					'agent', nullif(agent, ''), 'error', nullif(error, ''), 'hash', nullif(hash, ''))),
				CASE WHEN coalesce(length(request), 0) + coalesce(length(response), 0) > 0
					THEN int4send(coalesce(length(request), 0)) || coalesce(request, '') || coalesce(response, '') END
			FROM {schema}.trace_events
			ON CONFLICT (stream, id) DO NOTHING`,
		`DROP TABLE {schema}.trace_events`,
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
