package accounts

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/sqlitedb"
	"github.com/coorflow/coorflow/llm"
)

// TestAHoldOfADeadProcessExpires: a reservation its process never settled
// (it died with the call in flight) holds room for HoldTTL, then no more.
func TestAHoldOfADeadProcessExpires(t *testing.T) {
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "b.db"), sqlitedb.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	now := time.Unix(1_700_000_000, 0)
	a := SQLite(db)
	a.now = func() time.Time { return now }
	acc := a.Account(OwnerAccount("ann"), nil)
	assert.Equal(t, "owner/ann", acc.(interface{ Key() string }).Key(), "the key a worker is given to find the account")
	b := llm.Budget{Tokens: 1000}
	claim := llm.Claim{Prompt: 100, Completion: 800, Fixed: true}
	res, err := acc.Reserve(t.Context(), b, claim)
	require.NoError(t, err)
	require.Equal(t, llm.Fits, res.Verdict)
	assert.Equal(t, 900, res.Hold.Tokens)
	res, err = acc.Reserve(t.Context(), b, claim)
	require.NoError(t, err)
	assert.Equal(t, llm.Waits, res.Verdict, "the dead process's call still holds its room")

	now = now.Add(HoldTTL + time.Second)
	_, r, err := acc.Balance(t.Context())
	require.NoError(t, err)
	assert.Equal(t, llm.Reserved{}, r)
	res, err = acc.Reserve(t.Context(), b, claim)
	require.NoError(t, err)
	assert.Equal(t, llm.Fits, res.Verdict)
}
