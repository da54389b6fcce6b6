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
