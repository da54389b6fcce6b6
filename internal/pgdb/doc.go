// Package pgdb is what the PostgreSQL backends (checkpoint/postgres,
// store/postgres, trace/postgres) share: a pool opened from a URL with
// coorflow's limits, and the schema a backend keeps its tables in, chosen
// and migrated once, on first use, under an advisory lock (see
// internal/migrate).
//
// The backends on one database can share one pool: each keeps a Share of
// it, and only a Share that opened the pool closes it.
package pgdb
