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
	// Version 3: full-text search. The items get a rowid (the table is
	// rebuilt, as a WITHOUT ROWID table cannot gain one) that an FTS5
	// index with the trigram tokenizer keeps in step with, through
	// triggers; Match finds the items that contain a term of three
	// characters or more through it instead of reading every item.
	{
		`CREATE TABLE store_items_v3 (
			id           INTEGER PRIMARY KEY,
			owner        TEXT    NOT NULL,
			path         TEXT    NOT NULL,
			content      TEXT    NOT NULL,
			folded       TEXT    NOT NULL, -- lower-cased path and content, for search
			vis_scope    TEXT    NOT NULL,
			vis_id       TEXT    NOT NULL,
			content_type TEXT    NOT NULL,
			size         INTEGER NOT NULL,
			created      INTEGER NOT NULL, -- Unix microseconds
			updated      INTEGER NOT NULL,
			revision     INTEGER NOT NULL,
			labels       TEXT    NOT NULL DEFAULT '{}',
			UNIQUE (owner, path)
		)`,
		`INSERT INTO store_items_v3 (owner, path, content, folded, vis_scope, vis_id, content_type, size, created, updated, revision, labels)
			SELECT owner, path, content, folded, vis_scope, vis_id, content_type, size, created, updated, revision, labels FROM store_items`,
		`DROP TABLE store_items`,
		`ALTER TABLE store_items_v3 RENAME TO store_items`,
		`CREATE VIRTUAL TABLE store_fts USING fts5(folded, content='store_items', content_rowid='id', tokenize='trigram')`,
		`INSERT INTO store_fts(store_fts) VALUES ('rebuild')`,
		`CREATE TRIGGER store_items_fts_insert AFTER INSERT ON store_items BEGIN
			INSERT INTO store_fts(rowid, folded) VALUES (new.id, new.folded);
		END`,
		`CREATE TRIGGER store_items_fts_delete AFTER DELETE ON store_items BEGIN
			INSERT INTO store_fts(store_fts, rowid, folded) VALUES ('delete', old.id, old.folded);
		END`,
		`CREATE TRIGGER store_items_fts_update AFTER UPDATE OF folded ON store_items BEGIN
			INSERT INTO store_fts(store_fts, rowid, folded) VALUES ('delete', old.id, old.folded);
			INSERT INTO store_fts(rowid, folded) VALUES (new.id, new.folded);
		END`,
	},
}
