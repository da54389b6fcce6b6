// Package postgres is a trace.Store that keeps recorded runs in
// PostgreSQL, for several machines: any server replica can show any run.
//
// Open connects and creates or upgrades the tables (trace_runs,
// trace_events, and trace_schema, which records the migrations applied) in
// the connection's current schema or the one named with WithSchema; New
// wraps a pool the caller owns, which the checkpoint and store backends
// can share, and creates the tables on first use or by Migrate.
// Migrations run in one transaction under an advisory lock, and tables
// written by a newer version of this package are refused with
// ErrSchemaTooNew. Times are kept to the microsecond, in UTC; payloads
// byte for byte (bytea).
//
//	s, err := postgres.Open(ctx, "postgres://coorflow@db/coorflow")
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	rec := trace.NewRecorder(s, trace.RecorderConfig{})
package postgres
