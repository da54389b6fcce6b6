package pgdb

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listener turns the notifications of one PostgreSQL channel into wake-ups
// by payload: Changed(key) returns a channel closed at the next
// notification whose payload is key. A waiter looks at the table again
// when woken; after a lost connection every waiter is woken, since
// notifications sent meanwhile are lost. One connection of the pool is
// held from Start to Close.
type Listener struct {
	pool    *pgxpool.Pool
	channel string
	retry   time.Duration

	mu    sync.Mutex
	waits map[string]chan struct{} // by notification payload

	stop context.CancelFunc
	done chan struct{} // closed when the listener has ended
}

// maxWaits bounds the keys waited on: beyond it, every waiter is woken
// (they look again, and wait anew) and the map starts empty. A key nobody
// notifies again leaves its entry until then.
const maxWaits = 4096

// NewListener returns a listener (not started) on pool; retry is how
// long it waits before it connects again after a lost connection.
func NewListener(pool *pgxpool.Pool, retry time.Duration) *Listener {
	return &Listener{pool: pool, retry: retry, waits: make(map[string]chan struct{})}
}

// Start listens on channel until Close.
func (l *Listener) Start(ctx context.Context, channel string) error {
	l.channel = channel
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		conn.Release()
		return fmt.Errorf("listen: %w", err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	l.stop, l.done = cancel, make(chan struct{})
	go l.listen(lctx, conn)
	return nil
}

// Close stops listening and wakes every waiter.
func (l *Listener) Close() {
	if l.stop != nil {
		l.stop()
		<-l.done
		l.stop = nil
	}
	l.wakeAll()
}

// listen wakes the waiters of each notification until ctx ends. After a
// lost connection it wakes everyone — they look again — and listens on a
// new one.
func (l *Listener) listen(ctx context.Context, conn *pgxpool.Conn) {
	defer close(l.done)
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err == nil {
			l.wake(n.Payload)
			continue
		}
		conn.Release()
		if ctx.Err() != nil {
			return
		}
		l.wakeAll()
		for {
			if conn, err = l.pool.Acquire(ctx); err == nil {
				if _, err = conn.Exec(ctx, `LISTEN `+pgx.Identifier{l.channel}.Sanitize()); err == nil {
					break
				}
				conn.Release()
			}
			retry := time.NewTimer(l.retry)
			select {
			case <-ctx.Done():
				retry.Stop()
				return
			case <-retry.C:
			}
		}
		l.wakeAll() // what was notified meanwhile
	}
}

// Changed returns a channel closed at the next notification of key.
func (l *Listener) Changed(key string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := l.waits[key]
	if ch == nil && len(l.waits) >= maxWaits {
		l.wakeAllLocked()
	}
	if ch == nil {
		ch = make(chan struct{})
		l.waits[key] = ch
	}
	return ch
}

func (l *Listener) wake(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ch := l.waits[key]; ch != nil {
		close(ch)
		delete(l.waits, key)
	}
}

func (l *Listener) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wakeAllLocked()
}

func (l *Listener) wakeAllLocked() {
	for k, ch := range l.waits {
		close(ch)
		delete(l.waits, k)
	}
}
