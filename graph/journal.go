package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// journal holds a task's recorded calls and counts calls per scope and
// name, so each call gets a deterministic key.
type journal struct {
	mu      sync.Mutex
	entries map[string]json.RawMessage
	counts  map[string]int
}

// reset starts a new attempt: counting restarts, entries stay.
func (j *journal) reset() {
	j.mu.Lock()
	clear(j.counts)
	j.mu.Unlock()
}

// resetScope starts a new attempt of the work in scope (a task of the
// node): counting restarts for scope and the scopes below it.
func (j *journal) resetScope(scope string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for k := range j.counts {
		if rest, ok := strings.CutPrefix(k, scope); ok && (strings.HasPrefix(rest, "|") || strings.HasPrefix(rest, "/")) {
			delete(j.counts, k)
		}
	}
}

// next returns the key of the next call of name in scope.
func (j *journal) next(scope, name string) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.counts == nil {
		j.counts = make(map[string]int)
	}
	base := scope + "|" + name
	n := j.counts[base]
	j.counts[base] = n + 1
	return base + "#" + strconv.Itoa(n)
}

func (j *journal) get(key string) (json.RawMessage, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	raw, ok := j.entries[key]
	return raw, ok
}

func (j *journal) put(key string, raw json.RawMessage) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.entries == nil {
		j.entries = make(map[string]json.RawMessage)
	}
	j.entries[key] = raw
}

// Do runs fn once per task and records its result: when the node runs
// again — a retry, a resume after an interrupt, a restart after a crash —
// the recorded result is returned and fn is not called. Model calls, tool
// calls and any side effect belong in Do; code outside it may run more than
// once.
//
// A call is known by its scope (WithScope), its name and its position among
// the calls of that name in that scope, so calls must happen in the same
// order on every run of the node, and concurrent calls need different names
// or scopes. Only successes are recorded: a failed fn runs again next time.
// The result must survive a JSON round trip; recorded results are decoded
// from JSON. With a saver the record is written before Do returns; a
// process that dies after fn's side effect but before that write runs fn
// again on restart, so a side effect that must never repeat should also be
// idempotent (an idempotency key derived from the task, for instance).
// Outside a running node, Do just calls fn.
func Do[T any](ctx context.Context, name string, fn func(context.Context) (T, error)) (T, error) {
	e := emitterFrom(ctx)
	if e == nil || e.t == nil {
		return fn(ctx)
	}
	t := e.t
	key := t.jr.next(e.scope, name)
	if raw, ok := t.jr.get(key); ok {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return v, fmt.Errorf("graph: journal entry %q of node %q does not decode as %T: %w", key, e.node, v, err)
		}
		return v, nil
	}
	if e.r.only != nil && !e.only {
		// RunScheduled's node, outside its task: a call its own run has
		// not made is not made here either.
		var zero T
		return zero, fmt.Errorf("graph: call %q of node %q is not journaled, and RunScheduled runs only a task of the node: %w", key, e.node, errScheduledElsewhere)
	}
	v, err := fn(ctx)
	if err != nil {
		return v, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v, fmt.Errorf("graph: journal entry %q of node %q: encode %T: %w", key, e.node, v, err)
	}
	if p := e.r.p; p != nil {
		rec := TaskRecord{TaskID: t.label, Kind: recJournal, Key: key, Data: raw}
		if err := p.putRecordsNow(ctx, rec); err != nil {
			return v, fmt.Errorf("graph: journal entry %q of node %q: %w", key, e.node, err)
		}
	}
	t.jr.put(key, raw)
	return v, nil
}
