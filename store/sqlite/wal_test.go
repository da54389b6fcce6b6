package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPragmas(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "p.db"))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })

	var mode string
	require.NoError(t, s.b.db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode))
	assert.Equal(t, "wal", mode)
	var timeout int64
	require.NoError(t, s.b.db.QueryRowContext(t.Context(), "PRAGMA busy_timeout").Scan(&timeout))
	assert.Equal(t, DefaultBusyTimeout.Milliseconds(), timeout)
}
