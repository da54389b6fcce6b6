package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Snapshot is the state of a thread at one checkpoint.
type Snapshot struct {
	State      State
	Thread     string
	Checkpoint string
	Parent     string
	// Step is the step that produced the checkpoint (-1 for the first
	// input of a thread).
	Step   int
	Source Source
	// Writers are the tasks whose writes produced it.
	Writers []string
	// Next names the tasks the next step would run; empty when the run
	// finished.
	Next []string
	// Interrupts are the questions pending at this checkpoint.
	Interrupts []InterruptInfo
	// Tasks are the tasks of the step after this checkpoint, in the order
	// they run, with how far each got: done, failed, interrupted or
	// pending. When that step has completed (the checkpoint is not the
	// head of its branch), every task is done, with the interrupts it had
	// answered.
	Tasks   []StepTask
	Created time.Time
}

// HistoryLimit caps the checkpoints History returns.
func HistoryLimit(n int) Option { return func(c *config) { c.historyLimit = n } }

// InSubgraph makes State, StateAt and History read the checkpoints of one
// run of a subgraph node instead of the root graph's. ns names the run: a
// StepTask.Subgraph from the State of the parent (of the checkpoint before
// the step that ran it). Runs (Invoke, Stream) and UpdateState always work
// on the root graph and refuse it.
func InSubgraph(ns string) Option { return func(c *config) { c.subgraph = ns } }

// threadRun makes a run for reading or writing a thread outside a run; with
// InSubgraph, a run of the subgraph in its namespace.
func (r *Runnable) threadRun(ctx context.Context, thread string, opts []Option) (*run, error) {
	cfg := r.defaults
	cfg.apply(opts)
	cfg.thread = thread
	cfg.events = eventFilter{}
	if cfg.saver == nil {
		return nil, errors.New("graph: reading or updating a thread needs a saver: pass graph.WithSaver")
	}
	g, path := r, r.name
	if cfg.subgraph != "" {
		sub, err := r.subgraphAt(cfg.subgraph)
		if err != nil {
			return nil, err
		}
		g, path = sub, r.name+"/"+nsPath(cfg.subgraph)
		cfg.ns, cfg.subgraph = cfg.subgraph, ""
	}
	ru, err := g.newRun(cfg, path, nil)
	if err != nil {
		return nil, err
	}
	ru.ctx, ru.cancel = ctx, func() {}
	return ru, nil
}

// nsPath turns a subgraph namespace into the node path below the root
// ("sub@id/inner[2]@id" -> "sub/inner[2]").
func nsPath(ns string) string {
	segs := strings.Split(ns, "/")
	for i, seg := range segs {
		if at := strings.LastIndexByte(seg, '@'); at > 0 {
			segs[i] = seg[:at]
		}
	}
	return strings.Join(segs, "/")
}

func (ru *run) loadThread(id string) (CheckpointRecord, checkpointMeta, error) {
	rec, meta, err := ru.p.load(ru.ctx, id)
	switch {
	case errors.Is(err, ErrNotFound) && id != "":
		return rec, meta, fmt.Errorf("graph: thread %q has no checkpoint %q: %w", ru.p.thread, id, ErrNotFound)
	case errors.Is(err, ErrNotFound) && ru.p.ns != "":
		return rec, meta, ru.noSubgraphRun()
	case errors.Is(err, ErrNotFound):
		return rec, meta, fmt.Errorf("graph: thread %q does not exist: %w", ru.p.thread, ErrNotFound)
	case err != nil:
		return rec, meta, fmt.Errorf("graph: thread %q: %w", ru.p.thread, err)
	}
	return rec, meta, nil
}

func (ru *run) noSubgraphRun() error {
	return fmt.Errorf("graph: thread %q has no checkpoint of the subgraph run %q (it has not started, or the thread does not exist): %w",
		ru.p.thread, ru.p.ns, ErrNotFound)
}

// State returns the thread's newest checkpoint (or the one FromCheckpoint
// names), with the interrupts it is waiting on and the tasks of its next
// step (Snapshot.Tasks). With InSubgraph, it reads a subgraph's run.
func (r *Runnable) State(ctx context.Context, thread string, opts ...Option) (Snapshot, error) {
	ru, err := r.threadRun(ctx, thread, opts)
	if err != nil {
		return Snapshot{}, err
	}
	rec, meta, err := ru.loadThread(ru.cfg.checkpointID)
	if err != nil {
		return Snapshot{}, err
	}
	if err := ru.restore(rec, meta); err != nil {
		return Snapshot{}, err
	}
	snap := ru.snapshot(rec, meta)
	finished := false
	if ru.cfg.checkpointID != "" {
		if finished, err = ru.stepCompleted(rec); err != nil {
			return Snapshot{}, err
		}
	}
	if err := ru.describeStep(&snap, finished); err != nil {
		return Snapshot{}, err
	}
	return snap, nil
}

// describeStep reads the task records of the restored checkpoint and
// gives snap the interrupts pending there and the tasks of its next
// step; finished says that step completed on some branch.
func (ru *run) describeStep(snap *Snapshot, finished bool) error {
	if err := ru.loadRecords(); err != nil {
		return err
	}
	for _, id := range sortedKeys(ru.records) {
		tr := ru.records[id]
		if tr.done != nil {
			continue
		}
		for _, in := range tr.interrupts {
			if _, answered := tr.resume[in.ID]; !answered {
				snap.Interrupts = append(snap.Interrupts, in)
			}
		}
	}
	snap.Tasks = ru.stepTasks(finished)
	return nil
}

// stepCompleted reports whether the step after rec completed on some
// branch: a checkpoint of that step follows rec. A checkpoint is stored
// after its parent, so the thread's checkpoints are read newest first, a
// page at a time, down to rec only: reading the state of a thread's last
// checkpoint reads a few rows, not its whole history.
func (ru *run) stepCompleted(rec CheckpointRecord) (bool, error) {
	opts := ListOptions{Limit: 4}
	for {
		page, err := ru.p.saver.ListCheckpoints(ru.ctx, ru.p.thread, ru.p.ns, opts)
		if err != nil {
			return false, fmt.Errorf("graph: thread %q: list checkpoints: %w", ru.p.thread, err)
		}
		for _, c := range page {
			if c.ID == rec.ID {
				return false, nil
			}
			if c.ParentID == rec.ID && c.Source == SourceLoop {
				return true, nil
			}
		}
		if len(page) < opts.Limit {
			return false, nil
		}
		opts.Before = page[len(page)-1].ID
		opts.Limit *= 4
	}
}

// StateAt returns the checkpoint that step produced on the thread's
// current branch: the ancestry of its newest checkpoint, or of the one
// FromCheckpoint names. Step -1 is the thread's first input. When several
// checkpoints of the branch have that step (an UpdateState, the copy a
// replay starts from), it returns the newest. With InSubgraph, steps are
// those of the subgraph's run.
func (r *Runnable) StateAt(ctx context.Context, thread string, step int, opts ...Option) (Snapshot, error) {
	ru, err := r.threadRun(ctx, thread, opts)
	if err != nil {
		return Snapshot{}, err
	}
	head, _, err := ru.loadThread(ru.cfg.checkpointID)
	if err != nil {
		return Snapshot{}, err
	}
	all, err := ru.p.saver.ListCheckpoints(ctx, thread, ru.p.ns, ListOptions{})
	if err != nil {
		return Snapshot{}, fmt.Errorf("graph: thread %q: list checkpoints: %w", thread, err)
	}
	byID := make(map[string]CheckpointRecord, len(all))
	for _, c := range all {
		byID[c.ID] = c
	}
	// Steps never decrease from a branch's root to its head; the count
	// bounds the walk should the saver hold a cycle.
	c, ok := head, true
	for range len(all) + 1 {
		if !ok || c.Step < step {
			break
		}
		if c.Step == step {
			return r.State(ctx, thread, append(slices.Clip(opts), FromCheckpoint(c.ID))...)
		}
		c, ok = byID[c.ParentID]
	}
	return Snapshot{}, fmt.Errorf("graph: thread %q has no checkpoint of step %d on the branch of checkpoint %q (its head is step %d): %w",
		thread, step, head.ID, head.Step, ErrNotFound)
}

func (ru *run) snapshot(rec CheckpointRecord, meta checkpointMeta) Snapshot {
	return Snapshot{
		State: State{d: ru.state}, Thread: rec.Thread, Checkpoint: rec.ID, Parent: rec.ParentID,
		Step: rec.Step, Source: rec.Source, Writers: meta.Writers, Next: ru.sched.names(), Created: rec.Created,
	}
}

// History returns the thread's checkpoints, newest first, across every
// branch, each with its full state, its pending interrupts and the tasks
// of its next step (as State gives them; one read of task records per
// checkpoint). With InSubgraph, it returns those of a
// subgraph's run; StateAt finds the checkpoint of one step.
func (r *Runnable) History(ctx context.Context, thread string, opts ...Option) ([]Snapshot, error) {
	ru, err := r.threadRun(ctx, thread, opts)
	if err != nil {
		return nil, err
	}
	recs, err := ru.p.saver.ListCheckpoints(ctx, thread, ru.p.ns, ListOptions{Limit: ru.cfg.historyLimit})
	if err != nil {
		return nil, fmt.Errorf("graph: thread %q: list checkpoints: %w", thread, err)
	}
	if len(recs) == 0 && ru.p.ns != "" {
		return nil, ru.noSubgraphRun()
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("graph: thread %q does not exist: %w", thread, ErrNotFound)
	}
	metas := make([]checkpointMeta, len(recs))
	versions := make(map[string]string)
	for i, rec := range recs {
		if metas[i], err = decodeMeta(rec); err != nil {
			return nil, err
		}
		for ch := range metas[i].Versions {
			versions[ch] = ""
		}
	}
	vc, err := ru.loadBlobs(ctx, ru.p.saver, thread, ru.p.ns, versions, true)
	if err != nil {
		return nil, err
	}
	out := make([]Snapshot, len(recs))
	for i, rec := range recs {
		st, err := ru.r.layout.stateAt(vc, metas[i])
		if err != nil {
			return nil, fmt.Errorf("graph: thread %q checkpoint %q: %w", thread, rec.ID, err)
		}
		sched, err := ru.r.restoreSchedule(metas[i].Next)
		if err != nil {
			return nil, fmt.Errorf("%w: thread %q checkpoint %q: %w", ErrCorruptCheckpoint, thread, rec.ID, err)
		}
		ru.state, ru.sched = st, sched
		out[i] = ru.snapshot(rec, metas[i])
		// A checkpoint's children are newer: those in recs are all of them.
		finished := slices.ContainsFunc(recs[:i], func(c CheckpointRecord) bool { return c.ParentID == rec.ID && c.Source == SourceLoop })
		ru.p.cp = rec
		if err := ru.describeStep(&out[i], finished); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// UpdateState writes to a thread outside a run, as if node asNode had
// written writes: they go through the reducers, and the next step becomes
// asNode's successors (its static and conditional edges). With asNode
// empty, the writes are applied and the next step stays as it was.
//
// It writes after the newest checkpoint (source "update"), or after the one
// FromCheckpoint names (source "fork"): a fork starts a new branch of the
// thread's history, which the next run continues, while the old branch
// stays readable. It returns the new checkpoint's id. What tasks recorded
// before the update (finished work, pending interrupts) is not carried over:
// the next run starts the next step afresh.
func (r *Runnable) UpdateState(ctx context.Context, thread, asNode string, writes []Write, opts ...Option) (string, error) {
	if asNode != "" && r.nodes[asNode] == nil {
		return "", fmt.Errorf("graph: update thread %q as node %q: %w: graph %q has no such node", thread, asNode, ErrUnknownNode, r.name)
	}
	ru, err := r.threadRun(ctx, thread, opts)
	if err != nil {
		return "", err
	}
	if ru.r != r {
		return "", fmt.Errorf("graph: update thread %q: UpdateState writes to the root graph; a subgraph's state changes through the runs of its node, not InSubgraph", thread)
	}
	rec, meta, err := ru.loadThread(ru.cfg.checkpointID)
	if err != nil {
		return "", err
	}
	newest, _, err := ru.loadThread("")
	if err != nil {
		return "", err
	}
	if err := ru.restore(rec, meta); err != nil {
		return "", err
	}
	source := SourceUpdate
	if rec.ID != newest.ID {
		source = SourceFork
	}
	writer := asNode
	if writer == "" {
		writer = "update"
	}
	t := &task{node: r.nodes[asNode], name: writer, index: -1, label: writer, path: ru.path + "/" + writer}
	results := []taskResult{{cmd: Update(writes...)}}
	if err := ru.apply([]*task{t}, results); err != nil {
		return "", fmt.Errorf("graph: update thread %q: %w", thread, err)
	}
	if asNode != "" {
		ru.sched.triggered, ru.sched.packets = nil, nil
		if err := ru.follow(t); err != nil {
			return "", fmt.Errorf("graph: update thread %q as node %q: %w", thread, asNode, err)
		}
	}
	if err := ru.saveCheckpoint(source, []string{writer}); err != nil {
		return "", err
	}
	return ru.p.cp.ID, nil
}
