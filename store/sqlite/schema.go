package sqlite

import "errors"

// ErrSchemaTooNew is returned when the database was written by a newer
// version of this package, whose schema this version does not know.
var ErrSchemaTooNew = errors.New("sqlite: store schema is newer than this version supports")

// migrations[v-1] brings the schema from version v-1 to v. Append to it;
// never edit a migration that has been released.
var migrations = [][]string{
	// Version 1: the tables as first released. Releases before the version
	// table created them without one, so they may exist already.
	{
		`CREATE TABLE IF NOT EXISTS store_items (
			owner        TEXT    NOT NULL,
			path         TEXT    NOT NULL,
			content      TEXT    NOT NULL,
			folded       TEXT    NOT NULL, -- lower-cased path and content, for search
			priority     TEXT    NOT NULL,
			trust        TEXT    NOT NULL,
			sensitivity  TEXT    NOT NULL,
			load_trigger TEXT    NOT NULL,
			vis_scope    TEXT    NOT NULL,
			vis_id       TEXT    NOT NULL,
			content_type TEXT    NOT NULL,
			size         INTEGER NOT NULL,
			created      INTEGER NOT NULL, -- Unix microseconds
			updated      INTEGER NOT NULL,
			revision     INTEGER NOT NULL,
			PRIMARY KEY (owner, path)
		) WITHOUT ROWID`,
		`CREATE TABLE IF NOT EXISTS store_revisions (
			owner    TEXT    NOT NULL,
			path     TEXT    NOT NULL,
			revision INTEGER NOT NULL,
			content  TEXT    NOT NULL,
			PRIMARY KEY (owner, path, revision)
		) WITHOUT ROWID`,
	},
	// Version 2: priority, trust, sensitivity and trigger are no longer
	// columns but labels (a JSON object), under the keys store/board reads.
	{
		`ALTER TABLE store_items ADD COLUMN labels TEXT NOT NULL DEFAULT '{}'`,
		`UPDATE store_items SET labels = json_object('priority', priority, 'sensitivity', sensitivity,
			'trigger', load_trigger, 'trust', trust)`,
		`ALTER TABLE store_items DROP COLUMN priority`,
		`ALTER TABLE store_items DROP COLUMN trust`,
		`ALTER TABLE store_items DROP COLUMN sensitivity`,
		`ALTER TABLE store_items DROP COLUMN load_trigger`,
	},
}
