// Package postgres is the context-store backend for deployments with
// several machines: items live in PostgreSQL, reached through a pgx v5
// connection pool, so every server replica sees the same store.
//
//	s, err := postgres.Open(ctx, "postgres://…/coorflow", postgres.WithSchema("coorflow"))
//	if err != nil { ... }
//	defer s.Close()
//
// Open connects and owns its pool; New wraps a pool the caller owns, which
// the checkpoint and trace backends can share. Open (or Migrate, or the
// first use of a Store from New) creates the schema (DefaultSchema unless
// WithSchema names one) and the tables store_items and store_revisions
// when they are missing, and brings tables of an older release up to date
// (under an advisory lock, so replicas starting together do not race); it
// refuses tables of a newer release with ErrSchemaTooNew. Writes run in
// READ COMMITTED transactions that lock the item they change (SELECT …
// FOR UPDATE); concurrent writers of one item queue on that lock, and
// compare-and-swap sees the latest committed revision.
//
// Search uses ILIKE on path and content, so its case folding follows the
// database's LC_CTYPE (with a C locale only ASCII letters fold). Paths use
// the "C" collation, so listings are in byte order like the other
// backends.
package postgres
