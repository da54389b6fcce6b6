package runs

import (
	"maps"
	"sync"
)

// Ledger admits the runs of one process: it checks a run against its
// owner's quotas and its thread's open runs and records the admission in
// one critical section, so that runs asked for at once never get past a
// quota together. A single server keeps its runs in its memory, whatever
// Saver keeps its threads (SQLite included), so its ledger is this one;
// servers that share their runs as replicas admit them in the database
// that keeps them instead (package server/replicas: one transaction under
// a lock per owner, counting the shared run rows).
//
// The zero Ledger is not ready: make one with NewLedger.
type Ledger struct {
	mu      sync.Mutex
	owners  map[string]*Usage
	threads map[string]*thread
}

// thread is a thread with open runs: its holder, active, and the
// tickets queued behind it, oldest first.
type thread struct {
	holder *Ticket
	queue  []*Ticket
}

// NewLedger returns an empty Ledger.
func NewLedger() *Ledger {
	return &Ledger{owners: make(map[string]*Usage), threads: make(map[string]*thread)}
}

// ticketState is where a ticket is; Ledger.mu guards it.
type ticketState int

const (
	ticketActive ticketState = iota
	ticketQueued
	ticketReleased
)

// Ticket is one admitted run's place in a Ledger until it is released.
type Ticket struct {
	l                  *Ledger
	owner, thread, run string
	state              ticketState
}

// Admit admits the run req asks for, active or queued behind its
// thread's open runs, or refuses it with a *BusyError or a *QuotaError
// (see Request.Decide). The run holds its place until its ticket is
// released.
func (l *Ledger) Admit(req Request) (*Ticket, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var u Usage
	if p := l.owners[req.Owner]; p != nil {
		u = *p
	}
	th := l.threads[req.Thread]
	holder := ""
	if th != nil {
		holder = th.holder.run
	}
	queued, err := req.Decide(u, holder)
	if err != nil {
		return nil, err
	}
	t := &Ticket{l: l, owner: req.Owner, thread: req.Thread, run: req.Run}
	if queued {
		t.state = ticketQueued
		th.queue = append(th.queue, t)
		l.countLocked(t.owner, 0, 1)
		return t, nil
	}
	l.threads[req.Thread] = &thread{holder: t}
	l.countLocked(t.owner, 1, 0)
	return t, nil
}

// Run is the id of the ticket's run.
func (t *Ticket) Run() string { return t.run }

// Queued reports whether the ticket waits behind another run of its
// thread.
func (t *Ticket) Queued() bool {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	return t.state == ticketQueued
}

// Release gives the run's place up: it ended, failed, was cancelled or
// dropped. Only the first call counts; the later ones do nothing and
// return nil. When the run was its thread's active run and others are
// queued behind it, the oldest of them becomes active in the same step
// (its owner's queued run becomes an active one) and Release returns its
// ticket: that run is the one to start now.
func (t *Ticket) Release() (next *Ticket) {
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	th := l.threads[t.thread]
	switch t.state {
	case ticketReleased:
		return nil
	case ticketQueued:
		for i, q := range th.queue {
			if q == t {
				th.queue = append(th.queue[:i], th.queue[i+1:]...)
				break
			}
		}
		l.countLocked(t.owner, 0, -1)
	case ticketActive:
		l.countLocked(t.owner, -1, 0)
		if len(th.queue) == 0 {
			delete(l.threads, t.thread)
			break
		}
		next, th.queue = th.queue[0], th.queue[1:]
		th.holder, next.state = next, ticketActive
		l.countLocked(next.owner, 1, -1)
	}
	t.state = ticketReleased
	return next
}

// countLocked adds to the owner's usage and forgets an owner with none.
// l.mu is held.
func (l *Ledger) countLocked(owner string, active, queued int) {
	u := l.owners[owner]
	if u == nil {
		u = &Usage{}
		l.owners[owner] = u
	}
	u.Active += active
	u.Queued += queued
	if u.Active == 0 && u.Queued == 0 {
		delete(l.owners, owner)
	}
}

// Usage returns what the owner has admitted and not released.
func (l *Ledger) Usage(owner string) Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := l.owners[owner]; u != nil {
		return *u
	}
	return Usage{}
}

// Owners returns the usage of every owner with runs admitted and not
// released.
func (l *Ledger) Owners() map[string]Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]Usage, len(l.owners))
	for owner, u := range maps.All(l.owners) {
		out[owner] = *u
	}
	return out
}
