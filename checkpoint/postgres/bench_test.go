package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/coorflow/coorflow/checkpoint/savertest"
	"github.com/coorflow/coorflow/internal/pgtest"
)

func BenchmarkPutCheckpoint(b *testing.B) {
	pool := pgtest.Pool(b)
	savertest.BenchPutCheckpoint(b, newSaver(b, pool), walBytes(pool))
}

func BenchmarkPutTaskRecords(b *testing.B) {
	pool := pgtest.Pool(b)
	savertest.BenchPutTaskRecords(b, newSaver(b, pool), walBytes(pool))
}

// walBytes measures the write-ahead log the server has generated: every
// change it makes durable goes through it. It is the whole server's, so
// other clients writing at the same time add to it.
func walBytes(pool interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) savertest.BytesWritten {
	return func(b *testing.B) int64 {
		var n int64
		err := pool.QueryRow(b.Context(), `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&n)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
}

// BenchmarkCommitFloor is the least a durable write costs against the same
// server: a commit of one one-row INSERT of a bigint, one round trip, with
// synchronous_commit on (each commit waits for its WAL record to be
// flushed) and off (it does not). PutCheckpoint's ns/put above the "on"
// figure is what the saver adds.
func BenchmarkCommitFloor(b *testing.B) {
	pool := pgtest.Pool(b)
	schema := pgtest.Schema(b, pool, "coorflow_floor_")
	table := pgx.Identifier{schema, "floor"}.Sanitize()
	if _, err := pool.Exec(b.Context(), `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()+`; CREATE TABLE `+table+` (n bigint NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"on", "off"} {
		b.Run("synchronous_commit="+mode, func(b *testing.B) {
			conn, err := pool.Acquire(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Release()
			if _, err := conn.Exec(b.Context(), `SET synchronous_commit = `+mode); err != nil {
				b.Fatal(err)
			}
			defer conn.Exec(context.Background(), `RESET synchronous_commit`)
			b.ReportAllocs()
			n := int64(0)
			for b.Loop() {
				n++
				if _, err := conn.Exec(b.Context(), `INSERT INTO `+table+` (n) VALUES ($1)`, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
