package postgres_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/postgres"
	"github.com/coorflow/coorflow/store/storetest"
)

// freshSchema returns a schema name no other test uses, dropped when t
// ends, and a pool of its own; it skips t when no server answers.
func freshSchema(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.Pool(t)
	return pgtest.Schema(t, pool, "coorflow_store_test_"), pool
}

// open returns a migrated store on pool in schema, closed when t ends.
func open(t *testing.T, pool *pgxpool.Pool, schema string, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s := postgres.New(pool, append([]postgres.Option{postgres.WithSchema(schema)}, opts...)...)
	require.NoError(t, s.Migrate(t.Context()))
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	pgtest.Pool(t) // skips when no server answers
	storetest.Run(t, func(t *testing.T) store.Store {
		schema, pool := freshSchema(t)
		return open(t, pool, schema)
	})
}

func TestOpenWithoutURL(t *testing.T) {
	_, err := postgres.Open(t.Context(), "")
	require.ErrorIs(t, err, store.ErrInvalid)
	assert.EqualError(t, err, "postgres: open: store: invalid argument: no connection URL given")
}

// TestSharedSchemaAndPool opens several stores on one schema concurrently,
// as replicas starting together would, and checks they see one store.
func TestSharedSchemaAndPool(t *testing.T) {
	schema, _ := freshSchema(t)
	pool, err := pgxpool.New(t.Context(), pgtest.URL())
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	const replicas = 4
	stores := make([]*postgres.Store, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			stores[i] = postgres.New(pool, postgres.WithSchema(schema))
			errs[i] = stores[i].Migrate(t.Context())
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "replica %d", i)
	}
	_, err = stores[0].Add(t.Context(), "alice", "project/a", "from replica 0", store.Attrs{})
	require.NoError(t, err)
	it, err := stores[3].Get(t.Context(), "alice", "project/a")
	require.NoError(t, err)
	assert.Equal(t, "from replica 0", it.Content)

	for _, s := range stores {
		require.NoError(t, s.Close())
	}
	require.NoError(t, pool.Ping(t.Context()), "Close leaves a pool it did not open")
}

func TestConcurrentWritersOnTwoPools(t *testing.T) {
	schema, _ := freshSchema(t)
	handles := make([]*postgres.Store, 2)
	for i := range handles {
		s, err := postgres.Open(t.Context(), pgtest.URL(), postgres.WithSchema(schema))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, s.Close()) })
		handles[i] = s
	}
	_, err := handles[0].Add(t.Context(), "alice", "mission/r1/plan", `{}`, store.Attrs{ContentType: store.ContentJSON})
	require.NoError(t, err)

	const writers = 12
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		wg.Go(func() {
			<-start
			_, errs[i] = handles[i%2].Edit(t.Context(), "alice", "mission/r1/plan",
				store.Replace(1, fmt.Sprintf(`{"f%02d":%d}`, i, i)))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "writer %d", i)
	}
	it, err := handles[1].Get(t.Context(), "alice", "mission/r1/plan")
	require.NoError(t, err)
	assert.Equal(t, int64(writers+1), it.Revision)
}

func TestStoreConfigReachesTheStore(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	schema, pool := freshSchema(t)
	s := open(t, pool, schema, postgres.WithConfig(store.Config{Now: func() time.Time { return at }, KeepRevisions: -1}))
	m, err := s.Add(t.Context(), "alice", "project/doc", `{"a":1}`, store.Attrs{ContentType: store.ContentJSON})
	require.NoError(t, err)
	assert.Equal(t, at, m.Created, "Config.Now")
	_, err = s.Edit(t.Context(), "alice", "project/doc", store.Replace(1, `{"a":2}`))
	require.NoError(t, err)
	_, err = s.Edit(t.Context(), "alice", "project/doc", store.Replace(1, `{"a":1,"b":2}`))
	require.ErrorIs(t, err, store.ErrConflict, "Config.KeepRevisions < 0 keeps no merge base")
}
