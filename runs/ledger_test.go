package runs_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/runs"
)

// admitAll asks l for reqs at once, one goroutine each, all released
// together, and returns the tickets and errors, by request.
func admitAll(l *runs.Ledger, reqs []runs.Request) ([]*runs.Ticket, []error) {
	tickets, errs := make([]*runs.Ticket, len(reqs)), make([]error, len(reqs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Go(func() {
			<-start
			tickets[i], errs[i] = l.Admit(req)
		})
	}
	close(start)
	wg.Wait()
	return tickets, errs
}

func TestALedgerAdmitsExactlyTheActiveQuotaOfParallelRuns(t *testing.T) {
	const n, quota = 200, 16
	l := runs.NewLedger()
	reqs := make([]runs.Request, n)
	for i := range reqs {
		reqs[i] = runs.Request{Owner: "alice", Thread: fmt.Sprintf("alice/t%d", i), Run: fmt.Sprint(i), Limits: runs.Limits{MaxActive: quota, MaxQueued: 0}}
	}
	tickets, errs := admitAll(l, reqs)
	admitted := 0
	for i, err := range errs {
		if err == nil {
			admitted++
			assert.False(t, tickets[i].Queued())
			continue
		}
		var qe *runs.QuotaError
		require.ErrorAs(t, err, &qe)
		assert.ErrorIs(t, err, runs.ErrQuotaExceeded)
		assert.Equal(t, runs.QuotaError{Owner: "alice", Quota: runs.QuotaActiveRuns, Count: quota, Limit: quota}, *qe)
	}
	assert.Equal(t, quota, admitted)
	assert.Equal(t, runs.Usage{Active: quota}, l.Usage("alice"))

	_, err := l.Admit(runs.Request{Owner: "bob", Thread: "bob/t", Run: "b", Limits: runs.Limits{MaxActive: quota}})
	assert.NoError(t, err, "the quota is alice's, not bob's")
	for _, tk := range tickets {
		if tk != nil {
			assert.Nil(t, tk.Release())
			assert.Nil(t, tk.Release(), "a second release does nothing")
		}
	}
	assert.Equal(t, runs.Usage{}, l.Usage("alice"))
	assert.Equal(t, map[string]runs.Usage{"bob": {Active: 1}}, l.Owners())
}

func TestALedgerQueuesExactlyTheQueuedQuotaOfParallelRuns(t *testing.T) {
	const n, quota, threads = 200, 10, 4
	l := runs.NewLedger()
	limits := runs.Limits{MaxActive: threads, MaxQueued: quota}
	holders := make([]*runs.Ticket, threads)
	for i := range holders {
		var err error
		holders[i], err = l.Admit(runs.Request{Owner: "alice", Thread: fmt.Sprintf("t%d", i), Run: fmt.Sprintf("h%d", i), Limits: limits})
		require.NoError(t, err)
	}
	reqs := make([]runs.Request, n)
	for i := range reqs {
		reqs[i] = runs.Request{Owner: "alice", Thread: fmt.Sprintf("t%d", i%threads), Run: fmt.Sprint(i), Busy: runs.Queue, Limits: limits}
	}
	tickets, errs := admitAll(l, reqs)
	queued := 0
	for i, err := range errs {
		if err == nil {
			queued++
			assert.True(t, tickets[i].Queued())
			continue
		}
		var qe *runs.QuotaError
		require.ErrorAs(t, err, &qe)
		assert.Equal(t, runs.QuotaQueuedRuns, qe.Quota)
	}
	assert.Equal(t, quota, queued)
	assert.Equal(t, runs.Usage{Active: threads, Queued: quota}, l.Usage("alice"))

	// Each thread's runs take their turns, in order; the active count
	// never moves.
	for _, h := range holders {
		for next := h.Release(); next != nil; next = next.Release() {
			assert.False(t, next.Queued())
			u := l.Usage("alice")
			assert.LessOrEqual(t, u.Active, threads)
		}
	}
	assert.Empty(t, l.Owners())
}

func TestALedgerRefusesARunOnABusyThreadUnlessItQueues(t *testing.T) {
	l := runs.NewLedger()
	first, err := l.Admit(runs.Request{Owner: "alice", Thread: "t", Run: "r1", Limits: runs.NoLimits})
	require.NoError(t, err)
	_, err = l.Admit(runs.Request{Owner: "alice", Thread: "t", Run: "r2", Limits: runs.NoLimits})
	var be *runs.BusyError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, runs.BusyError{Thread: "t", Run: "r1"}, *be)
	assert.True(t, errors.Is(err, runs.ErrThreadBusy))
	assert.EqualError(t, err, `runs: thread "t" already has run "r1" open`)

	second, err := l.Admit(runs.Request{Owner: "alice", Thread: "t", Run: "r2", Busy: runs.Queue, Limits: runs.NoLimits})
	require.NoError(t, err)
	third, err := l.Admit(runs.Request{Owner: "alice", Thread: "t", Run: "r3", Busy: runs.Queue, Limits: runs.NoLimits})
	require.NoError(t, err)
	assert.Nil(t, second.Release(), "a queued run that leaves starts none")
	assert.Equal(t, runs.Usage{Active: 1, Queued: 1}, l.Usage("alice"))
	next := first.Release()
	require.NotNil(t, next)
	assert.Equal(t, "r3", next.Run())
	assert.Nil(t, third.Release())
	assert.Empty(t, l.Owners())
	_, err = l.Admit(runs.Request{Owner: "alice", Thread: "t", Run: "r4", Limits: runs.NoLimits})
	assert.NoError(t, err, "the thread is free")
}

func TestAQuotaErrorSaysWhoIsAtWhichQuota(t *testing.T) {
	_, err := runs.Request{Owner: "alice", Limits: runs.Limits{MaxActive: 0}}.Decide(runs.Usage{}, "")
	assert.EqualError(t, err, `runs: owner "alice" has 0 runs in progress, the most allowed (active_runs 0)`)
	_, err = runs.Request{Owner: "alice", Busy: runs.Queue, Limits: runs.Limits{MaxQueued: 2}}.Decide(runs.Usage{Queued: 2}, "r")
	assert.EqualError(t, err, `runs: owner "alice" has 2 runs queued, the most allowed (queued_runs 2)`)
}

// BenchmarkLedgerAdmitRelease admits and releases runs from parallel
// goroutines, each on a thread of its own, all of one owner.
func BenchmarkLedgerAdmitRelease(b *testing.B) {
	l := runs.NewLedger()
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		thread := fmt.Sprintf("alice/t%d", next.Add(1))
		for pb.Next() {
			t, err := l.Admit(runs.Request{Owner: "alice", Thread: thread, Run: "r", Limits: runs.NoLimits})
			if err != nil {
				b.Fatal(err)
			}
			t.Release()
		}
	})
}
