package scripted

import (
	"context"
	"sync"
)

// Barrier holds the replies that wait on it until n of them are waiting,
// then lets them all through. Use it as Reply.Wait to prove that n calls
// run at the same time: with fewer in flight the calls would block (until
// their contexts end, so give the test a deadline). Once open, it stays
// open.
type Barrier struct {
	n       int
	mu      sync.Mutex
	arrived int
	open    chan struct{}
}

// NewBarrier returns a barrier that opens when n callers wait on it.
func NewBarrier(n int) *Barrier {
	return &Barrier{n: n, open: make(chan struct{})}
}

// Wait blocks until n callers have called Wait, or ctx is done.
func (b *Barrier) Wait(ctx context.Context) error {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Until returns a Reply.Wait function that blocks until ch is closed or the
// call's context is done.
func Until(ch <-chan struct{}) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
