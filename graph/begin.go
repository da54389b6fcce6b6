package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// begin sets up the run's state and schedule: fresh from initial and input,
// or from the thread's checkpoint. It returns a result when the run has
// nothing to do.
func (ru *run) begin(initial []any, input []Write) (*Result, error) {
	if ru.p == nil {
		ru.fresh(initial)
		return nil, ru.applyInput(input)
	}
	thread := ru.p.thread
	if c, ok := ru.cachedHead(); ok {
		ru.p.head = c.rec.ID
		if err := ru.restoreState(c.rec, c.meta, c.state); err != nil {
			return nil, err
		}
		copy(ru.sizes, c.sizes)
		return ru.continueRun(c.rec, input)
	}
	rec, meta, err := ru.p.load(ru.ctx, ru.cfg.checkpointID)
	switch {
	case errors.Is(err, ErrNotFound) && ru.cfg.checkpointID != "":
		return nil, fmt.Errorf("graph: thread %q has no checkpoint %q: %w", thread, ru.cfg.checkpointID, ErrNotFound)
	case errors.Is(err, ErrNotFound) && ru.cfg.resume != nil:
		return nil, fmt.Errorf("graph: thread %q does not exist, so there is nothing to resume: %w", thread, ErrNotFound)
	case errors.Is(err, ErrNotFound) && input == nil && initial == nil:
		return nil, fmt.Errorf("graph: thread %q does not exist; start it with an input, not nil: %w: %w", thread, ErrNoInput, ErrNotFound)
	case errors.Is(err, ErrNotFound):
		ru.fresh(initial)
		if err := ru.applyInput(input); err != nil {
			return nil, err
		}
		ru.step = -1
		if err := ru.saveCheckpoint(SourceInput, []string{Start}); err != nil {
			return nil, err
		}
		ru.step = 0
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("graph: thread %q: load checkpoint: %w", thread, err)
	}
	if err := ru.restore(rec, meta); err != nil {
		return nil, err
	}
	if ru.cfg.checkpointID != "" {
		// The run starts a branch: it stores its checkpoints only while the
		// newest one is still the one it reads now.
		if err := ru.p.readHead(ru.ctx); err != nil {
			return nil, err
		}
	}
	return ru.continueRun(rec, input)
}

// continueRun goes on from the checkpoint rec the run restored: with new
// input, as a replay, or where the thread stopped.
func (ru *run) continueRun(rec CheckpointRecord, input []Write) (*Result, error) {
	if input != nil {
		return nil, ru.continueWithInput(input)
	}
	if ru.cfg.checkpointID != "" {
		if ru.cfg.resume != nil {
			return nil, errors.New("graph: FromCheckpoint replays a checkpoint; it cannot be combined with Resume")
		}
		return nil, ru.fork(rec)
	}
	return nil, ru.loadRecords()
}

// fork starts a replay: the steps after rec run again, on a new branch
// whose head is a copy of rec (source replay). Everything the replay records —
// task results, journal entries, interrupts and their answers, the
// checkpoints of its subgraphs — is keyed by that copy, so nothing recorded
// by an earlier run of those steps is reused, while a resume or a restart
// of the replay itself (which follows the copy) finds its own records.
func (ru *run) fork(rec CheckpointRecord) error {
	if ru.sched.empty() {
		return nil // nothing runs after rec
	}
	ru.step = rec.Step // the copy stands for rec, not for a new step
	err := ru.saveCheckpoint(SourceReplay, nil)
	ru.step = rec.Step + 1
	return err
}

func (ru *run) fresh(initial []any) {
	if initial == nil {
		initial = make([]any, len(ru.r.layout.channels))
	}
	ru.state = &stateData{layout: ru.r.layout, vals: initial}
	if ru.p != nil {
		for slot, v := range initial {
			if v != nil {
				ru.changes = append(ru.changes, change{slot: slot, writes: []any{v}})
			}
		}
	}
}

// applyInput writes the input through the reducers, as if a node called
// Start wrote it, and follows Start's edges.
func (ru *run) applyInput(input []Write) error {
	start := &task{name: Start, index: -1, label: Start, path: ru.path}
	tasks := []*task{start}
	results := []taskResult{{cmd: Update(input...)}}
	if err := ru.apply(tasks, results); err != nil {
		return err
	}
	return ru.route(tasks, results)
}

// continueWithInput starts a new run on a thread whose last run finished.
func (ru *run) continueWithInput(input []Write) error {
	if ru.cfg.resume != nil {
		return errors.New("graph: pass either an input or graph.Resume, not both")
	}
	if !ru.sched.empty() && ru.cfg.discardUnfinished {
		ru.sched.triggered, ru.sched.packets = nil, nil
	}
	if !ru.sched.empty() {
		return fmt.Errorf("graph: thread %q has an unfinished run (next: %s); continue it without input, with graph.Resume if it is interrupted",
			ru.p.thread, strings.Join(ru.sched.names(), ", "))
	}
	if err := ru.applyInput(input); err != nil {
		return err
	}
	if err := ru.saveCheckpoint(SourceInput, []string{Start}); err != nil {
		return err
	}
	ru.step++
	return nil
}

func (s *schedule) names() []string {
	out := slices.Clone(s.triggered)
	for _, p := range s.packets {
		out = append(out, p.Node)
	}
	return append(out, s.deferred...)
}

// restore loads the state and schedule of a checkpoint.
func (ru *run) restore(rec CheckpointRecord, meta checkpointMeta) error {
	if meta.Graph != ru.r.name {
		return fmt.Errorf("graph: thread %q checkpoint %q belongs to graph %q, not %q", rec.Thread, rec.ID, meta.Graph, ru.r.name)
	}
	vc, err := ru.loadBlobs(ru.ctx, ru.p.saver, ru.p.thread, ru.p.ns, meta.Versions, false)
	if err != nil {
		return err
	}
	st, err := ru.r.layout.stateAt(vc, meta)
	if err != nil {
		return fmt.Errorf("graph: thread %q checkpoint %q: %w", rec.Thread, rec.ID, err)
	}
	if ru.sizes != nil {
		vc.sizes(ru.r.layout, meta, ru.sizes)
	}
	if err := ru.restoreState(rec, meta, st); err != nil {
		return err
	}
	if ru.record != nil {
		return ru.loadOutput(rec)
	}
	return nil
}

// restoreState makes st, the state at checkpoint rec, and rec's schedule
// the run's.
func (ru *run) restoreState(rec CheckpointRecord, meta checkpointMeta, st *stateData) error {
	sched, err := ru.r.restoreSchedule(meta.Next)
	if err != nil {
		return fmt.Errorf("%w: thread %q checkpoint %q: %w", ErrCorruptCheckpoint, rec.Thread, rec.ID, err)
	}
	ru.state, ru.sched, ru.step = st, sched, rec.Step+1
	ru.p.cp = rec
	for k, v := range meta.Versions {
		ru.p.versions[k] = v
	}
	return nil
}

func (r *Runnable) scheduleRecord(s *schedule) (scheduleRecord, error) {
	rec := scheduleRecord{Triggered: s.triggered, Deferred: s.deferred, Seen: s.seen}
	for _, p := range s.packets {
		ws, err := r.layout.encodeWrites(p.Writes)
		if err != nil {
			return rec, err
		}
		rec.Packets = append(rec.Packets, packetRecord{Node: p.Node, Writes: ws})
	}
	return rec, nil
}

func (r *Runnable) restoreSchedule(rec scheduleRecord) (schedule, error) {
	s := schedule{triggered: slices.Clone(rec.Triggered), deferred: slices.Clone(rec.Deferred)}
	for _, n := range append(slices.Clone(rec.Triggered), rec.Deferred...) {
		if r.nodes[n] == nil {
			return s, fmt.Errorf("the next step runs node %q, which the graph no longer has", n)
		}
	}
	for _, p := range rec.Packets {
		if r.nodes[p.Node] == nil {
			return s, fmt.Errorf("the next step runs node %q, which the graph no longer has", p.Node)
		}
		ws, err := r.layout.decodeWrites(p.Writes)
		if err != nil {
			return s, err
		}
		s.packets = append(s.packets, Packet{Node: p.Node, Writes: ws})
	}
	s.seen = make([][]bool, len(r.joins))
	for i, j := range r.joins {
		s.seen[i] = make([]bool, len(j.sources))
		if i < len(rec.Seen) && len(rec.Seen[i]) == len(j.sources) {
			copy(s.seen[i], rec.Seen[i])
		}
	}
	return s, nil
}

// taskRecords is what was stored for one task of the step after the
// loaded checkpoint.
type taskRecords struct {
	done       *taskResult
	interrupts []InterruptInfo
	resume     map[string]json.RawMessage
	journal    map[string]json.RawMessage
	// err is the message of the task's last failure.
	err string
}

// attach gives a task what was recorded for it.
func (tr *taskRecords) attach(t *task) {
	if tr == nil {
		return
	}
	t.done = tr.done
	t.resume = tr.resume
	t.jr.entries = tr.journal
	if t.done != nil {
		return
	}
	for _, in := range tr.interrupts {
		if _, answered := t.resume[in.ID]; !answered {
			t.waiting = append(t.waiting, in)
		}
	}
	if len(t.waiting) < len(tr.interrupts) {
		t.waiting = nil // some answers came: the task runs again and asks what is still open
	}
}

// loadRecords reads what was stored for the step after the loaded
// checkpoint, applies the run's resume values, and keeps the rest for the
// first step's tasks.
func (ru *run) loadRecords() error {
	recs, err := ru.p.saver.TaskRecords(ru.ctx, ru.p.ref())
	if err != nil {
		return fmt.Errorf("graph: thread %q: read task records: %w", ru.p.thread, err)
	}
	ru.records = make(map[string]*taskRecords)
	get := func(id string) *taskRecords {
		tr := ru.records[id]
		if tr == nil {
			tr = &taskRecords{resume: map[string]json.RawMessage{}, journal: map[string]json.RawMessage{}}
			ru.records[id] = tr
		}
		return tr
	}
	breakpoint := false
	for _, rec := range recs {
		if err := ru.addRecord(get, rec, &breakpoint); err != nil {
			return fmt.Errorf("%w: thread %q checkpoint %q task %q: %w", ErrCorruptCheckpoint, ru.p.thread, ru.p.cp.ID, rec.TaskID, err)
		}
	}
	return ru.applyResume(get, breakpoint)
}

func (ru *run) addRecord(get func(string) *taskRecords, rec TaskRecord, breakpoint *bool) error {
	switch rec.Kind {
	case recResult:
		var rr resultRecord
		if err := json.Unmarshal(rec.Data, &rr); err != nil {
			return err
		}
		res, err := ru.r.decodeResult(rr)
		if err != nil {
			return err
		}
		if err := ru.r.checkCommand(nil, res.cmd); err != nil {
			return err
		}
		get(rec.TaskID).done = &res
	case recInterrupt:
		var ins []InterruptInfo
		if err := json.Unmarshal(rec.Data, &ins); err != nil {
			return err
		}
		get(rec.TaskID).interrupts = ins
	case recResume:
		get(rec.TaskID).resume[rec.Key] = json.RawMessage(rec.Data)
	case recJournal:
		get(rec.TaskID).journal[rec.Key] = json.RawMessage(rec.Data)
	case recError:
		return json.Unmarshal(rec.Data, &get(rec.TaskID).err)
	case recBreakpoint:
		// Any continuation passes a breakpoint; one before a step must
		// not pause that step again.
		*breakpoint = true
		ru.breakpointPassed = ru.breakpointPassed || rec.Key == "before"
	default:
		return fmt.Errorf("unknown record kind %q", rec.Kind)
	}
	return nil
}

// applyResume matches the run's resume values to the pending interrupts
// and stores them as answers.
func (ru *run) applyResume(get func(string) *taskRecords, breakpoint bool) error {
	var pending []InterruptInfo
	owner := make(map[string]string)
	for _, id := range sortedKeys(ru.records) {
		tr := ru.records[id]
		if tr.done != nil {
			continue
		}
		for _, in := range tr.interrupts {
			if _, answered := tr.resume[in.ID]; !answered {
				pending = append(pending, in)
				owner[in.ID] = id
			}
		}
	}
	answers := make(map[string]json.RawMessage)
	for id, v := range ru.answers {
		if _, ok := owner[id]; ok {
			answers[id] = v
		}
	}
	if rs := ru.cfg.resume; rs != nil {
		if err := ru.resumeAnswers(rs, pending, owner, answers, breakpoint); err != nil {
			return err
		}
	}
	var recs []TaskRecord
	for _, id := range sortedKeys(answers) {
		task := owner[id]
		get(task).resume[id] = answers[id]
		recs = append(recs, TaskRecord{TaskID: task, Kind: recResume, Key: id, Data: answers[id]})
	}
	if len(recs) == 0 {
		return nil
	}
	return ru.p.putRecordsNow(ru.ctx, recs...)
}

// resumeAnswers adds the run's resume values to answers, by interrupt id:
// one answer for the only pending interrupt, answers by id (ResumeEach) and
// by path (ResumeAt).
func (ru *run) resumeAnswers(rs *resumeSpec, pending []InterruptInfo, owner map[string]string, answers map[string]json.RawMessage, breakpoint bool) error {
	thread := ru.p.thread
	if len(pending) == 0 && !breakpoint {
		return fmt.Errorf("graph: thread %q is not interrupted; nothing to resume: %w", thread, ErrNotInterrupted)
	}
	if rs.hasOne && (len(rs.each) > 0 || len(rs.at) > 0) {
		return errors.New("graph: pass either graph.Resume or graph.ResumeAt and graph.ResumeEach, not both")
	}
	if rs.hasOne && len(pending) > 1 {
		return fmt.Errorf("graph: thread %q has %d pending interrupts: %s; answer each with graph.ResumeAt(path, value) or graph.ResumeEach: %w",
			thread, len(pending), describeInterrupts(pending), ErrAmbiguousResume)
	}
	if rs.hasOne && len(pending) == 1 {
		answers[pending[0].ID] = rs.one
	}
	for _, id := range sortedKeys(rs.each) {
		if _, ok := owner[id]; !ok {
			return fmt.Errorf("graph: thread %q has no pending interrupt %q (pending: %s): %w",
				thread, id, interruptIDs(pending), ErrNotInterrupted)
		}
		answers[id] = rs.each[id]
	}
	for _, path := range sortedKeys(rs.at) {
		match := matchPath(pending, ru.path, path)
		switch {
		case len(match) == 0:
			return fmt.Errorf("graph: thread %q has no pending interrupt at %q (pending: %s): %w",
				thread, path, describeInterrupts(pending), ErrNotInterrupted)
		case len(match) > 1:
			return fmt.Errorf("graph: thread %q has %d pending interrupts at %q (%s); answer them by id with graph.ResumeEach: %w",
				thread, len(match), path, interruptIDs(match), ErrAmbiguousResume)
		}
		if _, twice := rs.each[match[0].ID]; twice {
			return fmt.Errorf("graph: interrupt %s at %q is answered twice, by graph.ResumeEach and graph.ResumeAt", match[0].ID, path)
		}
		answers[match[0].ID] = rs.at[path]
	}
	return nil
}

func interruptIDs(ins []InterruptInfo) string {
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.ID
	}
	return strings.Join(ids, ", ")
}

func (r *Runnable) encodeResult(res taskResult) ([]byte, error) {
	ws, err := r.layout.encodeWrites(res.cmd.Update)
	if err != nil {
		return nil, err
	}
	rr := resultRecord{Writes: ws, Handled: res.handled}
	if res.cmd.Goto != nil {
		g := res.cmd.Goto
		rr.Goto = &g
	}
	for _, p := range res.cmd.Send {
		pws, err := r.layout.encodeWrites(p.Writes)
		if err != nil {
			return nil, err
		}
		rr.Send = append(rr.Send, packetRecord{Node: p.Node, Writes: pws})
	}
	return json.Marshal(rr)
}

func (r *Runnable) decodeResult(rr resultRecord) (taskResult, error) {
	ws, err := r.layout.decodeWrites(rr.Writes)
	if err != nil {
		return taskResult{}, err
	}
	res := taskResult{cmd: Command{Update: ws}, handled: rr.Handled, attempts: 1}
	if rr.Goto != nil {
		res.cmd.Goto = append([]string{}, (*rr.Goto)...)
	}
	for _, p := range rr.Send {
		pws, err := r.layout.decodeWrites(p.Writes)
		if err != nil {
			return taskResult{}, err
		}
		res.cmd.Send = append(res.cmd.Send, Packet{Node: p.Node, Writes: pws})
	}
	return res, nil
}
