package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/trace"
)

func (a *app) threads(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("threads: want list, show ID, history ID or rm ID")
	}
	sub, rest := args[0], args[1:]
	fs := newFlags("threads " + sub)
	d := a.addDBFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int("limit", 50, "list at most this many threads")
	workflow := fs.String("workflow", "", "the workflow of a thread the CLI did not start")
	pos, err := a.parse(fs, rest)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		if len(pos) != 0 {
			return usagef("threads list takes no argument")
		}
	case "show", "history", "rm":
		if len(pos) != 1 {
			return usagef("threads %s: give one thread id", sub)
		}
	default:
		return usagef("threads: unknown subcommand %q%s (want list, show, history or rm)", sub, didYouMean(sub, []string{"list", "show", "history", "rm"}))
	}
	base, err := a.openDB(ctx, d.db, true)
	if err != nil {
		if sub == "list" && errors.Is(err, errNoDatabase) {
			fmt.Fprintf(a.stdout, "no threads (no database at %s)\n", d.db)
			return nil
		}
		return err
	}
	defer base.Close()
	t := &threadCmd{app: a, db: base, owner: d.owner, json: *asJSON, workflow: *workflow}
	switch sub {
	case "list":
		return t.list(ctx, *limit)
	case "show":
		return t.show(ctx, pos[0])
	case "history":
		return t.history(ctx, pos[0])
	}
	return t.rm(ctx, pos[0])
}

type threadCmd struct {
	app      *app
	db       *db
	owner    string
	json     bool
	workflow string
}

// threadRow is a thread as threads list shows it.
type threadRow struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow,omitempty"`
	// Status is where the thread's newest recorded run left it (see
	// threadStatus); "" when no run of it is recorded.
	Status      string    `json:"status,omitempty"`
	LastRun     string    `json:"last_run,omitempty"`
	Checkpoints int       `json:"checkpoints"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
}

func (t *threadCmd) list(ctx context.Context, limit int) error {
	infos, err := t.db.saver.Threads(ctx, graph.ThreadListOptions{Limit: limit})
	if err != nil {
		return err
	}
	traces, err := t.db.traceStore(ctx)
	if err != nil { // the threads are still worth listing
		t.app.notice("no status shown: %v", err)
		traces = nil
	}
	rows := make([]threadRow, 0, len(infos))
	for _, in := range infos {
		row := threadRow{ID: in.ID, Checkpoints: in.Checkpoints, Created: in.Created, Updated: in.Updated}
		if ti, ok, err := t.db.threadInfo(ctx, t.owner, in.ID); err == nil && ok {
			row.Workflow = ti.Name
		}
		if traces == nil {
			rows = append(rows, row)
			continue
		}
		last, err := traces.Runs(ctx, trace.RunQuery{Thread: in.ID, Limit: 1})
		if err != nil {
			return err
		}
		if len(last) > 0 {
			row.Status, row.LastRun = threadStatus(last[0].Status), last[0].ID
		}
		rows = append(rows, row)
	}
	if t.json {
		return writeJSON(t.app, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(t.app.stdout, "no threads in %s\n", t.db.where)
		return nil
	}
	tw := tabwriter.NewWriter(t.app.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "THREAD\tWORKFLOW\tSTATUS\tLAST RUN\tCHECKPOINTS\tUPDATED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, orDash(r.Workflow), orDash(r.Status), orDash(r.LastRun), r.Checkpoints,
			r.Updated.Local().Format("2006-01-02 15:04:05"))
	}
	return tw.Flush()
}

// threadStatus names where a run of the given recorded status left its
// thread, in the words of threads list.
func threadStatus(run string) string {
	switch run {
	case trace.StatusInterrupted:
		return "waiting" // for an answer (threads show says which)
	case trace.StatusError:
		return "failed"
	case trace.StatusCancelled:
		return "stopped" // run it again to continue
	}
	return run // done, running
}

// runnable compiles the workflow of a thread, to read its checkpoints.
func (t *threadCmd) runnable(ctx context.Context, id string) (*graph.Runnable, *workflowRef, error) {
	ref := t.workflow
	if ref == "" {
		ti, ok, err := t.db.threadInfo(ctx, t.owner, id)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			if _, err := t.db.saver.GetCheckpoint(ctx, graph.CheckpointRef{Thread: id}); errors.Is(err, graph.ErrNotFound) {
				return nil, nil, fmt.Errorf("thread %s does not exist in %s", id, t.db.where)
			}
			return nil, nil, usagef("thread %s was not started by this CLI (owner %s): give its workflow with --workflow FILE", id, t.owner)
		}
		ref = ti.Workflow
	}
	wf, err := loadWorkflow(ref)
	if err != nil {
		return nil, nil, err
	}
	r, err := compileOffline(ctx, wf.file, t.db, t.owner)
	if err != nil {
		return nil, nil, err
	}
	return r, wf, nil
}

// threadView is a thread as threads show prints it.
type threadView struct {
	ID         string                `json:"id"`
	Workflow   string                `json:"workflow"`
	Status     string                `json:"status"`
	Checkpoint string                `json:"checkpoint"`
	Step       int                   `json:"step"`
	Next       []string              `json:"next,omitempty"`
	Interrupts []graph.InterruptInfo `json:"interrupts,omitempty"`
	Updated    time.Time             `json:"updated"`
	// Turns are the turns of the conversation, the last one possibly
	// under way.
	Turns  []turnRow      `json:"turns,omitempty"`
	Values map[string]any `json:"values"`
}

// turnRow is a turn as threads show lists it.
type turnRow struct {
	N      int    `json:"n"`
	Status string `json:"status"`
	Run    string `json:"run,omitempty"`
	Input  string `json:"input"`
	Answer string `json:"answer,omitempty"`
	Note   string `json:"note,omitempty"`
}

// turnRows lists the thread's turns: the finished ones, then the one under
// way, whose status is the thread's.
func turnRows(s graph.State, status string) []turnRow {
	var rows []turnRow
	for _, t := range nodes.Turns.Get(s) {
		rows = append(rows, turnRow{N: t.N, Status: "done", Run: t.Run, Input: t.Input, Answer: t.Answer, Note: t.Note})
	}
	if cur := nodes.CurrentTurn.Get(s); cur.N > 0 && (len(rows) == 0 || rows[len(rows)-1].N != cur.N) {
		rows = append(rows, turnRow{N: cur.N, Status: status, Run: cur.Run, Input: cur.Input, Note: cur.Note})
	}
	return rows
}

func (t *threadCmd) show(ctx context.Context, id string) error {
	r, wf, err := t.runnable(ctx, id)
	if err != nil {
		return err
	}
	snap, err := r.State(ctx, id)
	if err != nil {
		return threadErr(err, id, t.db.where)
	}
	v := threadView{ID: id, Workflow: wf.ref, Status: status(snap), Checkpoint: snap.Checkpoint, Step: snap.Step,
		Next: snap.Next, Interrupts: snap.Interrupts, Updated: snap.Created, Values: snap.State.Values()}
	v.Turns = turnRows(snap.State, v.Status)
	if t.json {
		return writeJSON(t.app, v)
	}
	w := t.app.stdout
	fmt.Fprintf(w, "thread      %s\nworkflow    %s (%s)\nstatus      %s\ncheckpoint  %s (step %d, %s)\n",
		id, wf.file.Name(), wf.ref, v.Status, snap.Checkpoint, snap.Step, snap.Created.Local().Format("2006-01-02 15:04:05"))
	if len(snap.Next) > 0 {
		fmt.Fprintf(w, "next        %s\n", strings.Join(snap.Next, ", "))
	}
	vals := snap.State
	if len(v.Turns) > 0 {
		fmt.Fprintf(w, "turns       %d\n", len(v.Turns))
		for _, t := range v.Turns {
			fmt.Fprintf(w, "  %-3d %-6s %-11s %s\n", t.N, oneLine(t.Status, 40), orDash(t.Run), oneLine(t.Input, 100))
			if t.Answer != "" {
				fmt.Fprintf(w, "      answer: %s\n", oneLine(t.Answer, 110))
			}
			if t.Note != "" {
				fmt.Fprintf(w, "      note:   %s\n", oneLine(t.Note, 110))
			}
		}
	}
	for _, ch := range []string{"input", "request"} {
		if s, _ := vals.Value(ch); s != nil && s != "" {
			fmt.Fprintf(w, "%-11s %s\n", ch, oneLine(fmt.Sprint(s), 120))
		}
	}
	if p := nodes.PlanKey.Get(vals); p != nil {
		fmt.Fprintf(w, "plan        %s\n", p.Title)
		for _, s := range p.Steps {
			st := "pending"
			if s.Result != nil {
				st = s.Result.Status
			}
			fmt.Fprintf(w, "  %-4s %-8s %-18s %s\n", s.ID, st, s.AgentName, s.Title)
		}
	}
	for _, name := range vals.Channels() {
		if isBuiltinChannel(name) {
			continue
		}
		if val, ok := vals.Value(name); ok {
			fmt.Fprintf(w, "%-11s %s\n", name, oneLine(render(val), 120))
		}
	}
	for _, q := range snap.Interrupts {
		fmt.Fprintf(w, "\n%s", describeQuestion(q))
	}
	if out, ok := vals.Value(wf.file.OutputChannel()); ok {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(render(out)))
	}
	return nil
}

func isBuiltinChannel(name string) bool {
	for _, c := range nodes.Channels() {
		if c.Name() == name {
			return true
		}
	}
	return false
}

// status names where a thread stands.
func status(s graph.Snapshot) string {
	switch {
	case len(s.Interrupts) > 0:
		return "waiting for an answer"
	case len(s.Next) > 0:
		return "stopped before " + strings.Join(s.Next, ", ") + " (run it again to continue)"
	}
	return "done"
}

// checkpointRow is a checkpoint as threads history shows it.
type checkpointRow struct {
	Checkpoint string    `json:"checkpoint"`
	Parent     string    `json:"parent,omitempty"`
	Step       int       `json:"step"`
	Source     string    `json:"source"`
	Writers    []string  `json:"writers,omitempty"`
	Next       []string  `json:"next,omitempty"`
	Created    time.Time `json:"created"`
}

func (t *threadCmd) history(ctx context.Context, id string) error {
	r, _, err := t.runnable(ctx, id)
	if err != nil {
		return err
	}
	hist, err := r.History(ctx, id)
	if err != nil {
		return threadErr(err, id, t.db.where)
	}
	rows := make([]checkpointRow, len(hist))
	for i, s := range hist {
		rows[i] = checkpointRow{Checkpoint: s.Checkpoint, Parent: s.Parent, Step: s.Step, Source: string(s.Source), Writers: s.Writers, Next: s.Next, Created: s.Created}
	}
	if t.json {
		return writeJSON(t.app, rows)
	}
	tw := tabwriter.NewWriter(t.app.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECKPOINT\tSTEP\tSOURCE\tWRITTEN BY\tNEXT\tTIME")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.Checkpoint, r.Step, r.Source, dash(r.Writers), dash(r.Next), r.Created.Local().Format("15:04:05.000"))
	}
	return tw.Flush()
}

func (t *threadCmd) rm(ctx context.Context, id string) error {
	if _, err := t.db.saver.GetCheckpoint(ctx, graph.CheckpointRef{Thread: id}); err != nil {
		return threadErr(err, id, t.db.where)
	}
	if err := t.db.saver.DeleteThread(ctx, id); err != nil {
		return err
	}
	if it, err := t.db.store.Get(ctx, t.owner, threadPath(id)); err == nil {
		_ = t.db.store.Delete(ctx, t.owner, threadPath(id), it.Revision)
	}
	n, err := t.removeRuns(ctx, id)
	if err != nil {
		return fmt.Errorf("removed thread %s, but not all its recorded runs: %w", id, err)
	}
	runs := fmt.Sprintf("%d recorded runs", n)
	if n == 1 {
		runs = "1 recorded run"
	}
	fmt.Fprintf(t.app.stdout, "removed thread %s and its %s\n", id, runs)
	return nil
}

// removeRuns deletes the recorded runs of a thread (their events, context
// snapshots and model calls): a removed thread leaves nothing of its
// conversation behind, and runs list shows no run of a thread that is
// gone. It returns how many it removed.
func (t *threadCmd) removeRuns(ctx context.Context, id string) (int, error) {
	traces, err := t.db.traceStore(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		runs, err := traces.Runs(ctx, trace.RunQuery{Thread: id, Limit: 500})
		if err != nil || len(runs) == 0 {
			return n, err
		}
		for _, r := range runs {
			if err := traces.DeleteRun(ctx, r.ID); err != nil {
				return n, fmt.Errorf("run %s: %w", r.ID, err)
			}
			n++
		}
	}
}

func threadErr(err error, id, where string) error {
	if errors.Is(err, graph.ErrNotFound) {
		return fmt.Errorf("thread %s does not exist in %s", id, where)
	}
	return err
}

func dash(list []string) string {
	if len(list) == 0 {
		return "-"
	}
	return strings.Join(list, ",")
}

func writeJSON(a *app, v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
