package enginetest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
)

// backend opens savers over one store: open may be called several times,
// each call standing for a new process.
type backend struct {
	name string
	open func(t testing.TB) graph.Saver
}

// backends returns the three backends, each over a fresh store.
func backends(t testing.TB) []backend {
	t.Helper()
	mem := memory.New()
	path := filepath.Join(t.TempDir(), "coorflow.db")
	schema := "enginetest_" + randomHex(6)
	out := []backend{
		{"memory", func(testing.TB) graph.Saver { return mem }},
		{"sqlite", func(t testing.TB) graph.Saver {
			s, err := sqlite.Open(context.Background(), path)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
	conn, err := pgx.Connect(context.Background(), pgtest.URL())
	if err != nil {
		t.Logf("PostgreSQL is not reachable at %s (%v): the postgres backend is not tested here", pgtest.URL(), err)
		return out
	}
	_ = conn.Close(context.Background())
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), pgtest.URL())
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			_ = c.Close(context.Background())
		}
	})
	return append(out, backend{"postgres", func(t testing.TB) graph.Saver {
		s, err := postgres.Open(context.Background(), pgtest.URL(), postgres.WithSchema(schema))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
