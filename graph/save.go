package graph

import (
	"encoding/json"
	"fmt"
	"slices"
)

// saveCheckpoint stores the state after the current step: the channels
// that changed (a delta for reducer channels that allow one, else the whole
// value) and the schedule.
func (ru *run) saveCheckpoint(source Source, writers []string) error {
	changes := ru.changes
	ru.changes = ru.changes[:0]
	if ru.p == nil {
		return nil
	}
	id := newID()
	blobs := make([]Blob, 0, len(changes))
	var output []writeRecord
	for _, c := range changes {
		ch := ru.r.layout.channels[c.slot]
		name := ch.Name()
		blob := Blob{Channel: name, Version: id}
		base, hasBase := ru.p.versions[name]
		var err error
		d, isDelta := ch.delta(c.writes)
		isDelta = isDelta && c.had && hasBase
		if isDelta {
			blob.Base = base
			blob.Data, err = ch.encode(d)
		} else {
			blob.Data, err = ch.encode(ru.state.vals[c.slot])
		}
		if err != nil {
			return err
		}
		if ru.sizes != nil {
			if !isDelta {
				ru.sizes[c.slot] = 0
			}
			ru.sizes[c.slot] += len(blob.Data)
		}
		blobs = append(blobs, blob)
		ru.p.versions[name] = id
		if ru.record != nil && ru.shared[name] && source == SourceLoop {
			for _, w := range c.writes {
				data, err := ch.encode(w)
				if err != nil {
					return err
				}
				output = append(output, writeRecord{Channel: name, Value: data})
			}
		}
	}
	next, err := ru.r.scheduleRecord(&ru.sched)
	if err != nil {
		return fmt.Errorf("graph: encode the next step's packets: %w", err)
	}
	meta := checkpointMeta{Graph: ru.r.name, Versions: ru.p.versions, Writers: writers, Next: next, Output: output}
	rec, err := ru.p.checkpoint(ru.ctx, id, ru.step, source, meta, blobs)
	if err != nil {
		return err
	}
	if ru.stateCache != nil {
		ru.cacheCheckpoint(rec, meta)
	}
	ru.emit(Event{Kind: EventCheckpoint, Step: ru.step, Data: id})
	return nil
}

// breakBefore pauses before a step that runs a node of InterruptBefore,
// unless the run is resuming from that very pause.
func (ru *run) breakBefore(tasks []*task) *Result {
	passed := ru.breakpointPassed
	ru.breakpointPassed = false
	if passed || len(ru.cfg.interruptBefore) == 0 {
		return nil
	}
	for _, t := range tasks {
		if ru.cfg.interruptBefore[t.name] {
			return ru.breakpoint(t, "before")
		}
	}
	return nil
}

// breakAfter pauses after a step that ran a node of InterruptAfter.
func (ru *run) breakAfter(tasks []*task) *Result {
	if len(ru.cfg.interruptAfter) == 0 || ru.sched.empty() {
		return nil
	}
	for _, t := range tasks {
		if ru.cfg.interruptAfter[t.name] {
			return ru.breakpoint(t, "after")
		}
	}
	return nil
}

// Breakpoint is the payload of the interrupt of a static breakpoint.
type Breakpoint struct {
	// When is "before" or "after".
	When string `json:"when"`
	Node string `json:"node"`
}

func (ru *run) breakpoint(t *task, when string) *Result {
	in := InterruptInfo{
		ID:      interruptID(ru.p.ns, ru.p.cp.ID, "", when+":"+t.label),
		Node:    t.name,
		Path:    t.path,
		Payload: Breakpoint{When: when, Node: t.name},
	}
	return &Result{State: State{d: ru.state}, Status: StatusInterrupted, Interrupts: []InterruptInfo{in}}
}

func (ru *run) saveBreakpoint(in InterruptInfo) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return ru.p.putRecords(ru.ctx, TaskRecord{TaskID: "", Kind: recBreakpoint, Key: in.Payload.(Breakpoint).When, Data: data})
}

// loadOutput collects, for a subgraph's run that resumes, the writes to
// shared channels made by the steps before its checkpoint.
func (ru *run) loadOutput(rec CheckpointRecord) error {
	all, err := ru.p.saver.ListCheckpoints(ru.ctx, ru.p.thread, ru.p.ns, ListOptions{})
	if err != nil {
		return fmt.Errorf("graph: thread %q: list checkpoints of %q: %w", ru.p.thread, ru.p.ns, err)
	}
	byID := make(map[string]CheckpointRecord, len(all))
	for _, c := range all {
		byID[c.ID] = c
	}
	var chain []CheckpointRecord
	for c, ok := rec, true; ok; c, ok = byID[c.ParentID] {
		chain = append(chain, c)
		if c.ParentID == "" {
			break
		}
	}
	slices.Reverse(chain)
	for _, c := range chain {
		m, err := decodeMeta(c)
		if err != nil {
			return err
		}
		ws, err := ru.r.layout.decodeWrites(m.Output)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorruptCheckpoint, err)
		}
		for _, w := range ws {
			ru.record(w)
		}
	}
	return nil
}
