package postgres

import (
	"errors"

	"github.com/coorflow/coorflow/internal/pgdb"
)

// ErrSchemaTooNew is returned when the tables were created by a newer
// version of this package, whose schema this version does not know.
var ErrSchemaTooNew = errors.New("postgres: store schema is newer than this version supports")

// migrations[v-1] brings the schema from version v-1 to v; "{schema}"
// stands for the quoted schema name. Append to it; never edit a migration
// that has been released.
var migrations = [][]string{
	// Version 1: the tables as first released. Releases before the version
	// table created them without one, so they may exist already.
	{
		`CREATE TABLE IF NOT EXISTS {schema}.store_items (
			owner        text        NOT NULL,
			path         text        COLLATE "C" NOT NULL,
			content      text        NOT NULL,
			priority     text        NOT NULL,
			trust        text        NOT NULL,
			sensitivity  text        NOT NULL,
			load_trigger text        NOT NULL,
			vis_scope    text        NOT NULL,
			vis_id       text        NOT NULL,
			content_type text        NOT NULL,
			size         bigint      NOT NULL,
			created      timestamptz NOT NULL,
			updated      timestamptz NOT NULL,
			revision     bigint      NOT NULL,
			PRIMARY KEY (owner, path)
		)`,
		`CREATE TABLE IF NOT EXISTS {schema}.store_revisions (
			owner    text   NOT NULL,
			path     text   COLLATE "C" NOT NULL,
			revision bigint NOT NULL,
			content  text   NOT NULL,
			PRIMARY KEY (owner, path, revision)
		)`,
	},
	// Version 2: priority, trust, sensitivity and trigger are no longer
	// columns but labels (a JSON object), under the keys store/board reads.
	{
		`ALTER TABLE {schema}.store_items ADD COLUMN labels jsonb NOT NULL DEFAULT '{}'`,
		`UPDATE {schema}.store_items SET labels = jsonb_build_object('priority', priority, 'sensitivity', sensitivity,
			'trigger', load_trigger, 'trust', trust)`,
		`ALTER TABLE {schema}.store_items DROP COLUMN priority, DROP COLUMN trust, DROP COLUMN sensitivity,
			DROP COLUMN load_trigger`,
	},
	// Version 3: full-text search through trigram indexes (pg_trgm), which
	// serve the ILIKE substring matches of Match. The extension is created
	// when the server has it and the user may; without it, search reads
	// the owner's items as before.
	{
		`DO $$
		DECLARE ext_schema text;
		BEGIN
			IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')
				AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
				BEGIN
					CREATE EXTENSION IF NOT EXISTS pg_trgm;
				EXCEPTION WHEN insufficient_privilege THEN
					RAISE NOTICE 'coorflow: pg_trgm is not installed and this user may not install it: store search reads every item';
				END;
			END IF;
			SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				WHERE e.extname = 'pg_trgm';
			IF ext_schema IS NOT NULL THEN
				EXECUTE format('CREATE INDEX IF NOT EXISTS store_items_trgm ON {schema}.store_items USING gin (content %1$I.gin_trgm_ops, path %1$I.gin_trgm_ops)', ext_schema);
			END IF;
		END $$`,
	},
}

// schemaMigrations are migrations with the lock and the version table
// they are applied under (see migrate.Postgres).
var schemaMigrations = pgdb.Migrations{
	Lock:   "coorflow/store:",
	Table:  "store_schema",
	Steps:  migrations,
	TooNew: ErrSchemaTooNew,
}
