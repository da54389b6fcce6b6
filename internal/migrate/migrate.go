// Package migrate applies numbered schema migrations to SQLite and
// PostgreSQL databases, once each, for the packages that keep data in them
// (checkpoint, store, trace), called through internal/sqlitedb's Share
// setups and internal/pgdb. Migrations are append-only lists of statements; the
// version reached is kept in a table of its own.
package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SQLite brings the database of conn to the last of migrations, recording
// versions in table. It holds SQLite's write lock from the start (BEGIN
// IMMEDIATE), so processes opening one file at once apply each migration
// exactly once. A database at a version beyond migrations fails with an
// error wrapping tooNew.
func SQLite(ctx context.Context, conn *sql.Conn, table string, migrations [][]string, tooNew error) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("sqlite: migrate: begin: %w", err)
	}
	defer func() {
		if err != nil {
			// A failed statement may have ended the transaction already.
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (version INTEGER PRIMARY KEY)`); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	var version int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+table).Scan(&version); err != nil {
		return fmt.Errorf("sqlite: migrate: read schema version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("%w: the database is at version %d, this package knows up to %d", tooNew, version, len(migrations))
	}
	for v := version + 1; v <= len(migrations); v++ {
		for _, stmt := range migrations[v-1] {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("sqlite: migrate to version %d: %w", v, err)
			}
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO `+table+` (version) VALUES (?)`, v); err != nil {
			return fmt.Errorf("sqlite: migrate to version %d: %w", v, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("sqlite: migrate: commit: %w", err)
	}
	return nil
}

// Postgres creates schema if needed and brings it to the last of
// migrations, recording versions in table, in one transaction that holds an
// advisory lock named lock+schema: processes that start at once wait for
// each other, and each migration is applied once. "{schema}" in a
// statement stands for the quoted schema name. A schema at a version
// beyond migrations fails with an error wrapping tooNew.
func Postgres(ctx context.Context, pool *pgxpool.Pool, schema, lock, table string, migrations [][]string, tooNew error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	quoted := pgx.Identifier{schema}.Sanitize()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, lock+schema); err != nil {
		return fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	for _, stmt := range []string{
		`CREATE SCHEMA IF NOT EXISTS ` + quoted,
		`CREATE TABLE IF NOT EXISTS ` + quoted + `.` + table + ` (version integer PRIMARY KEY)`,
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("postgres: migrate: %w", err)
		}
	}
	var version int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+quoted+`.`+table).Scan(&version); err != nil {
		return fmt.Errorf("postgres: migrate: read schema version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("%w: schema %s is at version %d, this package knows up to %d", tooNew, schema, version, len(migrations))
	}
	for v := version + 1; v <= len(migrations); v++ {
		for _, stmt := range migrations[v-1] {
			if _, err := tx.Exec(ctx, strings.ReplaceAll(stmt, "{schema}", quoted)); err != nil {
				return fmt.Errorf("postgres: migrate to version %d: %w", v, err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+quoted+`.`+table+` (version) VALUES ($1)`, v); err != nil {
			return fmt.Errorf("postgres: migrate to version %d: %w", v, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: commit: %w", err)
	}
	return nil
}
