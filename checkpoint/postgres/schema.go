package postgres

import (
	"errors"

	"github.com/coorflow/coorflow/internal/pgdb"
)

// ErrSchemaTooNew is returned when the tables were created by a newer
// version of this package, whose schema this version does not know.
var ErrSchemaTooNew = errors.New("postgres: checkpoint schema is newer than this version supports")

// migrations[v-1] brings the schema from version v-1 to v; "{schema}"
// stands for the quoted schema name. Append to it; never edit a migration
// that has been released.
var migrations = [][]string{
	{
		// seq orders checkpoints by when they were stored.
		`CREATE TABLE {schema}.checkpoints (
			seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			thread_id     text COLLATE "C" NOT NULL,
			ns            text COLLATE "C" NOT NULL,
			checkpoint_id text COLLATE "C" NOT NULL,
			parent_id     text NOT NULL,
			step          bigint NOT NULL,
			source        text NOT NULL,
			created       timestamptz NOT NULL,
			meta          bytea NOT NULL,
			CONSTRAINT checkpoints_id UNIQUE (thread_id, ns, checkpoint_id)
		)`,
		`CREATE INDEX checkpoints_by_seq ON {schema}.checkpoints (thread_id, ns, seq)`,
		// The newest checkpoint and the counts of each namespace of each
		// thread. PutCheckpoint updates its row, which also makes writers
		// of one namespace of one thread take turns.
		`CREATE TABLE {schema}.checkpoint_heads (
			thread_id   text COLLATE "C" NOT NULL,
			ns          text COLLATE "C" NOT NULL,
			last_seq    bigint NOT NULL,
			checkpoints bigint NOT NULL,
			created     timestamptz NOT NULL,
			updated     timestamptz NOT NULL,
			PRIMARY KEY (thread_id, ns)
		)`,
		`CREATE TABLE {schema}.checkpoint_blobs (
			thread_id text COLLATE "C" NOT NULL,
			ns        text COLLATE "C" NOT NULL,
			channel   text COLLATE "C" NOT NULL,
			version   text COLLATE "C" NOT NULL,
			base      text NOT NULL,
			data      bytea NOT NULL,
			PRIMARY KEY (thread_id, ns, channel, version)
		)`,
		`CREATE TABLE {schema}.checkpoint_tasks (
			thread_id     text COLLATE "C" NOT NULL,
			ns            text COLLATE "C" NOT NULL,
			checkpoint_id text COLLATE "C" NOT NULL,
			task_id       text COLLATE "C" NOT NULL,
			kind          text COLLATE "C" NOT NULL,
			key           text COLLATE "C" NOT NULL,
			data          bytea NOT NULL,
			PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, kind, key),
			FOREIGN KEY (thread_id, ns, checkpoint_id)
				REFERENCES {schema}.checkpoints (thread_id, ns, checkpoint_id) ON DELETE CASCADE
		)`,
	},
	{
		// The lease of each thread that a server replica runs: who holds
		// it, until when (by the database's clock), and its fencing
		// token, which grows with every new holder and is never reset (a
		// released lease expires instead of being deleted).
		`CREATE TABLE {schema}.thread_leases (
			thread_id text COLLATE "C" PRIMARY KEY,
			holder    text NOT NULL,
			token     bigint NOT NULL,
			expires   timestamptz NOT NULL
		)`,
	},
}

// schemaMigrations are migrations with the lock and the version table
// they are applied under (see migrate.Postgres).
var schemaMigrations = pgdb.Migrations{
	Lock:   "coorflow/checkpoint:",
	Table:  "checkpoint_schema",
	Steps:  migrations,
	TooNew: ErrSchemaTooNew,
}
