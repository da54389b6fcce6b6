package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freshDatabase creates a database on the test server
// (COORFLOW_TEST_POSTGRES, or the local one) and returns its URL; it is
// dropped when the test ends. The test is skipped without a server.
func freshDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("COORFLOW_TEST_POSTGRES")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test"
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Skipf("postgres: cannot connect to %s (set COORFLOW_TEST_POSTGRES): %v", base, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "coorflow_cli_" + hex.EncodeToString(b)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		assert.NoError(t, err)
		_ = conn.Close(ctx)
	})
	cfg := conn.Config()
	return strings.Replace(base, "/"+cfg.Database, "/"+name, 1)
}

func TestTheMainCommandKeepsThreadsAndAgentsInPostgres(t *testing.T) {
	url := freshDatabase(t)
	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput, "--db", url)
	require.Equal(t, exitOK, code, stderr)
	id, run := threadOf(t, stdout), runOf(t, stdout)
	assert.Contains(t, stdout, "thread "+id+" saved in "+url)

	code, stdout, stderr = c.run("threads", "show", id, "--db", url)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "status      done\n")
	code, stdout, _ = c.run("agents", "list", "--db", url)
	require.Equal(t, exitOK, code)
	assert.Regexp(t, `(?m)^postgres_analyst +built +reasoning`, stdout)

	code, stdout, stderr = c.run("runs", "list", "--db", url)
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `(?m)^`+run+`  `+id+`  coor +done +input `, stdout, "the run is recorded in Postgres")
	code, stdout, stderr = c.run("replay", run, "--db", url)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "; no divergence\n")
}
