package pgdb_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/pgdb"
	"github.com/coorflow/coorflow/internal/pgtest"
)

func TestOpenSizesThePool(t *testing.T) {
	// Open connects lazily: no server is needed to read the pool's size.
	tests := []struct {
		name, url string
		want      int32
	}{
		{"default", "postgres://nobody@127.0.0.1:1/none", pgdb.MaxConns()},
		{"from the URL", "postgres://nobody@127.0.0.1:1/none?pool_max_conns=3", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool, err := pgdb.Open(t.Context(), tt.url)
			require.NoError(t, err)
			defer pool.Close()
			assert.Equal(t, tt.want, pool.Config().MaxConns)
		})
	}
	assert.GreaterOrEqual(t, pgdb.MaxConns(), int32(12), "as three pools of pgx's default size")
}

func TestOpenRefusesAMalformedURL(t *testing.T) {
	_, err := pgdb.Open(t.Context(), "postgres://x?pool_max_conns=many")
	require.Error(t, err)
	assert.Regexp(t, `^postgres: open: .*pool_max_conns`, err.Error())
}

var errClosed = errors.New("test: closed")

// migrations create one table.
var migrations = pgdb.Migrations{
	Lock: "coorflow/pgdb-test:", Table: "test_schema", TooNew: errors.New("too new"),
	Steps: [][]string{{`CREATE TABLE {schema}.t (x int)`}},
}

func TestShareMigratesTheNamedSchemaOnce(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_pgdb_test_")
	var setups []string
	s := pgdb.NewShare(pool, pgdb.Backend{Schema: schema, Migrations: migrations, Closed: errClosed,
		Setup: func(quoted string) { setups = append(setups, quoted) }})
	for range 2 {
		quoted, err := s.Init(t.Context())
		require.NoError(t, err)
		assert.Equal(t, pgx.Identifier{schema}.Sanitize(), quoted)
	}
	assert.Len(t, setups, 1)
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema}.Sanitize()+`.test_schema`).Scan(&n))
	assert.Equal(t, 1, n)

	s.Close()
	_, err := s.Init(t.Context())
	require.ErrorIs(t, err, errClosed)
	require.NoError(t, pool.Ping(t.Context()), "a Share that does not own the pool leaves it open")
}

func TestAShareThatOwnsThePoolClosesIt(t *testing.T) {
	pgtest.Pool(t) // skips when no server answers
	pool, err := pgdb.Open(t.Context(), pgtest.URL())
	require.NoError(t, err)
	s := pgdb.NewShare(pool, pgdb.Backend{Migrations: migrations, Closed: errClosed})
	s.Own()
	s.Close()
	assert.Error(t, pool.Ping(context.Background()), "closed")
}

func TestShareWithoutACurrentSchemaSaysHowToNameOne(t *testing.T) {
	pgtest.Pool(t)
	pool, err := pgdb.Open(t.Context(), withParam(pgtest.URL(), "search_path=coorflow_pgdb_nowhere"))
	require.NoError(t, err)
	defer pool.Close()
	_, err = pgdb.NewShare(pool, pgdb.Backend{Migrations: migrations, Closed: errClosed}).Init(t.Context())
	assert.EqualError(t, err, "postgres: the connection has no current schema (search_path); name one with WithSchema")
}

// withParam adds a query parameter to url.
func withParam(url, param string) string {
	if strings.Contains(url, "?") {
		return url + "&" + param
	}
	return url + "?" + param
}
