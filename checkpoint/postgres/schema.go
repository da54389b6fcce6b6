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
	{
		// The statement of PutCheckpoint after the first checkpoint of a
		// namespace (see queries.putAfter), in a function so that its plan
		// is made once per connection: as a prepared statement the server
		// planned it again on every call (the generic plan is costed
		// higher, as it cannot know the blob arrays hold one element),
		// which took about as long as running it. $1 to $13 are the
		// checkpoint, its blobs as four arrays and the expected head; the
		// result is 1 when the checkpoint was stored, 0 when $13 is not
		// the head. The head is checked through the primary key of
		// checkpoints, the one index that plan can use for it: looked up
		// by thread, namespace and id, a table without statistics yet
		// (a new schema) was read through checkpoints_by_seq, every
		// checkpoint of the namespace at each step, and a plan made once
		// would keep doing so.
		`CREATE FUNCTION {schema}.put_checkpoint_after(
			text, text, text, text, bigint, text, timestamptz, bytea,
			text[], text[], text[], bytea[], text
		) RETURNS bigint LANGUAGE plpgsql
		SET plan_cache_mode = force_generic_plan
		AS $fn$
		DECLARE
			stored bigint;
		BEGIN
			WITH head AS (
				SELECT h.thread_id FROM {schema}.checkpoint_heads h
				WHERE h.thread_id = $1 AND h.ns = $2
					AND EXISTS (SELECT 1 FROM {schema}.checkpoints c WHERE c.seq = h.last_seq AND c.checkpoint_id = $13)
				FOR UPDATE
			), cp AS (
				INSERT INTO {schema}.checkpoints (thread_id, ns, checkpoint_id, parent_id, step, source, created, meta)
				SELECT $1, $2, $3, $4, $5, $6, $7, $8 FROM head
				RETURNING seq
			), blobs AS (
				INSERT INTO {schema}.checkpoint_blobs (thread_id, ns, channel, version, base, data)
				SELECT $1, $2, b.channel, b.version, b.base, b.data
				FROM cp, unnest($9, $10, $11, $12) AS b (channel, version, base, data)
				ON CONFLICT DO NOTHING
			)
			UPDATE {schema}.checkpoint_heads h SET
				last_seq    = cp.seq,
				checkpoints = h.checkpoints + 1,
				created     = LEAST(h.created, $7),
				updated     = GREATEST(h.updated, $7)
			FROM cp WHERE h.thread_id = $1 AND h.ns = $2;
			GET DIAGNOSTICS stored = ROW_COUNT;
			RETURN stored;
		END
		$fn$`,
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
