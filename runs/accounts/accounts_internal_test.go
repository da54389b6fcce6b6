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

// TestATransactionWaitsForTheWriteLockBeyondOneBusyTimeout: a write
// transaction whose BEGIN IMMEDIATE finds the lock still held after the
// handle's busy timeout tries again instead of failing (under many
// processes SQLite's busy handler is not fair: a budget reservation
// failed with SQLITE_BUSY in TestOwnerBudgetHoldsAcrossSQLiteProcesses on
// a loaded machine), and starts once the holder lets go.
func TestATransactionWaitsForTheWriteLockBeyondOneBusyTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	holder, err := sqlitedb.Open(path, sqlitedb.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close() })
	waiter, err := sqlitedb.Open(path, sqlitedb.Options{BusyTimeout: 5 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = waiter.Close() })

	hc, err := holder.Conn(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = hc.Close() })
	_, err = hc.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	require.NoError(t, err)

	wc, err := waiter.Conn(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = wc.Close() })
	_, err = wc.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	require.Error(t, err)
	assert.True(t, isBusy(err), "a lock held past the busy timeout is SQLITE_BUSY: %v", err)

	retried := make(chan struct{}, 1)
	busyRetried = func() {
		select {
		case retried <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { busyRetried = nil })
	began := make(chan error, 1)
	go func() { began <- beginImmediate(t.Context(), wc) }()
	select {
	case <-retried: // its first try timed out while the lock was held
	case err := <-began:
		t.Fatalf("BEGIN IMMEDIATE gave up while the lock was held: %v", err)
	}
	_, err = hc.ExecContext(t.Context(), "COMMIT")
	require.NoError(t, err)
	require.NoError(t, <-began, "it waited and began")
	_, err = wc.ExecContext(t.Context(), "ROLLBACK")
	require.NoError(t, err)
}
