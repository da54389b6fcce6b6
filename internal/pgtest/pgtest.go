// Package pgtest connects tests to the PostgreSQL server they run against:
// COORFLOW_TEST_POSTGRES, or the local one. A test skips, saying why, only
// when no server answers at all; every other failure is a test failure.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultURL is the server on this machine and in CI.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test"

// URL returns COORFLOW_TEST_POSTGRES, or DefaultURL.
func URL() string {
	if u := os.Getenv("COORFLOW_TEST_POSTGRES"); u != "" {
		return u
	}
	return DefaultURL
}

// Pool connects to the test server, closing the pool when t ends, and
// skips t when it cannot connect at all.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, URL())
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		t.Skipf("postgres: cannot connect to %s (set COORFLOW_TEST_POSTGRES): %v", URL(), err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Schema returns the name of a schema, starting with prefix, that no other
// test uses, and drops it with everything in it when t ends.
func Schema(t testing.TB, pool *pgxpool.Pool, prefix string) string {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}
