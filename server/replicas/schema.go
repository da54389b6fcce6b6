package replicas

import (
	"errors"

	"github.com/coorflow/coorflow/internal/pgdb"
)

// ErrSchemaTooNew is returned when the tables were created by a newer
// version of this package, whose schema this version does not know.
var ErrSchemaTooNew = errors.New("replicas: schema is newer than this version supports")

// migrations[v-1] brings the schema from version v-1 to v; "{schema}"
// stands for the quoted schema name. Append to it; never edit a migration
// that has been released.
var migrations = [][]string{
	{
		// One row per run; seq orders the runs of a thread. token is the
		// fencing token of the lease its replica holds on the thread;
		// started says whether a replica got past the run's start, base
		// the thread's newest checkpoint then.
		`CREATE TABLE {schema}.server_runs (
			run_id     text COLLATE "C" PRIMARY KEY,
			seq        bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
			thread_key text COLLATE "C" NOT NULL,
			thread_id  text NOT NULL,
			owner      text NOT NULL,
			workflow   text NOT NULL,
			request    bytea NOT NULL,
			status     text NOT NULL,
			started    boolean NOT NULL DEFAULT false,
			base       text NOT NULL DEFAULT '',
			checkpoint text NOT NULL DEFAULT '',
			error      jsonb,
			created    timestamptz NOT NULL,
			started_at timestamptz,
			ended_at   timestamptz,
			holder     text NOT NULL DEFAULT '',
			token      bigint NOT NULL DEFAULT 0,
			takeovers  integer NOT NULL DEFAULT 0,
			cancel     boolean NOT NULL DEFAULT false
		)`,
		`CREATE INDEX server_runs_by_thread ON {schema}.server_runs (thread_key, seq)`,
		`CREATE INDEX server_runs_open ON {schema}.server_runs (seq) WHERE status IN ('queued', 'running')`,
		`CREATE INDEX server_runs_open_by_owner ON {schema}.server_runs (owner) WHERE status IN ('queued', 'running')`,
		// The events of each run, as the streams send them.
		`CREATE TABLE {schema}.server_run_events (
			run_id text COLLATE "C" NOT NULL REFERENCES {schema}.server_runs ON DELETE CASCADE,
			id     bigint NOT NULL,
			name   text NOT NULL,
			frame  bytea NOT NULL,
			PRIMARY KEY (run_id, id)
		)`,
	},
	{
		// The ended runs, newest first, for Prune.
		`CREATE INDEX server_runs_ended ON {schema}.server_runs (seq) WHERE status NOT IN ('queued', 'running')`,
	},
	{
		// What an ended run's model calls spent, and its run budget.
		`ALTER TABLE {schema}.server_runs ADD COLUMN usage jsonb, ADD COLUMN budget jsonb`,
	},
	{
		// The events an older version stored move to the event log
		// (runs/eventlog, whose tables in this schema are made first),
		// and their table goes: the event log is the one table family
		// of the runs' events.
		`WITH moved AS (DELETE FROM {schema}.server_run_events RETURNING run_id, id, name, frame),
			ins AS (INSERT INTO {schema}.event_frames (stream, id, name, frame) SELECT run_id, id, name, frame FROM moved ON CONFLICT DO NOTHING)
		INSERT INTO {schema}.event_streams AS s (stream, fence, last)
		SELECT m.run_id, r.token, max(m.id) FROM moved m JOIN {schema}.server_runs r USING (run_id) GROUP BY m.run_id, r.token
		ON CONFLICT (stream) DO UPDATE SET last = greatest(s.last, excluded.last), fence = greatest(s.fence, excluded.fence)`,
		`DROP TABLE {schema}.server_run_events`,
	},
	{
		// What the thread of a run that deleted it at its end (a
		// stateless run) held then: its waiters on any replica are
		// answered with it.
		`ALTER TABLE {schema}.server_runs ADD COLUMN final jsonb`,
	},
	{
		// The threads being deleted, closed to new runs (CloseThread):
		// Enqueue refuses a run on one while its mark has not expired.
		// holder is the replica deleting it, token its mark, which it
		// renews until the deletion ends and then removes: a replica
		// that died leaves a mark that expires.
		`CREATE TABLE {schema}.server_closed_threads (
			thread_key text COLLATE "C" PRIMARY KEY,
			holder     text NOT NULL,
			token      text NOT NULL,
			expires    timestamptz NOT NULL
		)`,
	},
	{
		// The notice of a run's end (a webhook, an A2A task's end and
		// push notifications): '' none, 'due' to deliver once the run
		// ended, 'sent'. notice_until is the end of the claim of the
		// replica delivering it: another delivers it after that.
		`ALTER TABLE {schema}.server_runs ADD COLUMN notice text NOT NULL DEFAULT '', ADD COLUMN notice_until timestamptz`,
		`CREATE INDEX server_runs_notices ON {schema}.server_runs (seq) WHERE notice = 'due'`,
	},
}

// schemaMigrations are migrations with the lock and the version table
// they are applied under.
var schemaMigrations = pgdb.Migrations{
	Lock:   "coorflow/replicas:",
	Table:  "server_runs_schema",
	Steps:  migrations,
	TooNew: ErrSchemaTooNew,
}
