package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/trace"
)

func (a *app) runs(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("runs: want list, show RUN, usage or prune")
	}
	sub, rest := args[0], args[1:]
	fs := newFlags("runs " + sub)
	d := a.addDBFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int("limit", 50, "list at most this many runs")
	thread := fs.String("thread", "", "list only the runs of this thread")
	status := fs.String("status", "", "list only the runs with this status: running, done, interrupted, error or cancelled")
	keep := addRetentionFlags(fs, "")
	dryRun := fs.Bool("dry-run", false, "prune: say what would be removed, remove nothing")
	pos, err := a.parse(fs, rest)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		if len(pos) != 0 {
			return usagef("runs list takes no argument")
		}
	case "show":
		if len(pos) != 1 {
			return usagef("runs show: give one run id")
		}
	case "prune", "usage":
		if len(pos) != 0 {
			return usagef("runs %s takes no argument", sub)
		}
	default:
		return usagef("runs: unknown subcommand %q%s (want list, show, usage or prune)", sub, didYouMean(sub, []string{"list", "show", "usage", "prune"}))
	}
	base, err := a.openDB(ctx, d.db, true)
	if err != nil {
		if (sub == "list" || sub == "prune" || sub == "usage") && !isPostgres(d.db) {
			fmt.Fprintf(a.stdout, "no runs (no database at %s)\n", d.db)
			return nil
		}
		return err
	}
	defer base.Close()
	traces, err := base.traceStore(ctx)
	if err != nil {
		return err
	}
	switch sub {
	case "show":
		return a.showRun(ctx, base, traces, pos[0], *asJSON)
	case "prune":
		p := keep.policy()
		if flagSet(fs, "owner") {
			p.Owner = d.owner
		}
		p.DryRun = *dryRun
		return a.pruneRuns(ctx, traces, p, *asJSON)
	}
	q := trace.RunQuery{Thread: *thread, Status: *status, Limit: *limit}
	if flagSet(fs, "owner") {
		q.Owner = d.owner
	}
	if sub == "usage" {
		return a.runsUsage(ctx, traces, q, *asJSON)
	}
	return a.listRuns(ctx, base, traces, q, *asJSON)
}

func (a *app) listRuns(ctx context.Context, base *db, traces trace.Store, q trace.RunQuery, asJSON bool) error {
	runs, err := traces.Runs(ctx, q)
	if err != nil {
		return err
	}
	if asJSON {
		for i := range runs {
			runs[i].FinalState = nil // runs show --json has it
		}
		if runs == nil {
			runs = []trace.RunInfo{}
		}
		return writeJSON(a, runs)
	}
	if len(runs) == 0 {
		fmt.Fprintf(a.stdout, "no runs in %s\n", base.where)
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tTHREAD\tWORKFLOW\tSTATUS\tSTART\tSTARTED\tTOOK")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, orDash(r.Thread), orDash(r.Graph), r.Status, r.Start,
			r.StartedAt.Local().Format("2006-01-02 15:04:05"), took(r))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// took is how long a run took, or "-" while it runs.
func took(r trace.RunInfo) string {
	if r.EndedAt == nil {
		return "-"
	}
	return r.EndedAt.Sub(r.StartedAt).Round(10 * time.Millisecond).String()
}

// loadRun returns a recorded run, or an error that says where it was
// looked for.
func loadRun(ctx context.Context, base *db, traces trace.Store, id string) (trace.RunInfo, error) {
	run, err := traces.Run(ctx, id)
	if errors.Is(err, trace.ErrNotFound) {
		return run, fmt.Errorf("no run %s in %s (coorflow runs list shows the recorded runs)", id, base.where)
	}
	return run, err
}

func (a *app) showRun(ctx context.Context, base *db, traces trace.Store, id string, asJSON bool) error {
	if _, err := loadRun(ctx, base, traces, id); err != nil {
		return err
	}
	tl, err := trace.LoadTimeline(ctx, traces, id)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a, tl)
	}
	w, r := a.stdout, tl.Run
	fmt.Fprintf(w, "run         %s\nthread      %s\nworkflow    %s (%s)\nowner       %s\nstatus      %s\n",
		r.ID, orDash(r.Thread), orDash(r.Graph), orDash(r.Workflow), orDash(r.Owner), r.Status)
	fmt.Fprintf(w, "started     %s, %s\n", r.StartedAt.Local().Format("2006-01-02 15:04:05"), startedBy(r.Start))
	if r.EndedAt != nil {
		fmt.Fprintf(w, "ended       %s (took %s)\n", r.EndedAt.Local().Format("2006-01-02 15:04:05"), took(r))
	}
	if in := trace.DescribeInput(r.Input); in != "" {
		fmt.Fprintf(w, "input       %s\n", in)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "error       %s\n", oneLine(r.Error, 200))
	}
	fmt.Fprintf(w, "events      %d\n", r.Events)
	fmt.Fprintf(w, "usage       %s\n", tl.Usage)
	printTimeline(w, tl)
	if r.Start == trace.StartInput {
		fmt.Fprintf(w, "\nreplay it offline: coorflow replay %s\n", r.ID)
	}
	if _, err := finishedPlan(r); err == nil {
		fmt.Fprintf(w, "fix its plan and agents in a workflow file: coorflow export %s -o FILE\n", r.ID)
	}
	return nil
}

func startedBy(start string) string {
	switch start {
	case trace.StartInput:
		return "from an input"
	case trace.StartResume:
		return "answering a question of its thread"
	}
	return "continuing its thread"
}

// printTimeline prints a run's steps: each node, then the agents that
// worked in it, one per line.
func printTimeline(w io.Writer, tl trace.Timeline) {
	if len(tl.Steps) == 0 {
		return
	}
	fmt.Fprintln(w, "steps")
	for _, st := range tl.Steps {
		for _, n := range st.Nodes {
			line := fmt.Sprintf("  %3d  %-14s %s", st.Step, n.Node, n.Status)
			if len(n.Created) > 0 {
				line += "  built " + strings.Join(n.Created, ", ")
			}
			if n.Error != "" {
				line += "  " + oneLine(n.Error, 120)
			}
			fmt.Fprintln(w, line)
			for _, ag := range n.Agents {
				name := ag.Name
				if ag.Run != "" {
					name = ag.Run + " " + name
				}
				calls := fmt.Sprintf("%d model calls", ag.ModelCalls)
				if ag.ModelCalls == 1 {
					calls = "1 model call"
				}
				fmt.Fprintf(w, "         %-30s %-8s %s%s\n", name, ag.Status, calls, agentCost(ag.Usage))
			}
		}
	}
}

// agentCost is what an agent's calls took: ", 1234 tokens, $0.0012".
func agentCost(s llm.Spend) string {
	if s.Calls == 0 {
		return ""
	}
	cost := llm.USD(s.CostUSD)
	if s.UnpricedCalls > 0 {
		cost = "cost unknown"
	}
	return fmt.Sprintf(", %d tokens, %s", s.Tokens(), cost)
}

// usageReport is what runs usage prints as JSON.
type usageReport struct {
	Owner  string    `json:"owner,omitempty"`
	Thread string    `json:"thread,omitempty"`
	Runs   int       `json:"runs"`
	Usage  llm.Spend `json:"usage"`
}

// runsUsage sums what the selected runs spent: a thread's (--thread), an
// owner's (--owner) or every recorded run's.
func (a *app) runsUsage(ctx context.Context, traces trace.Store, q trace.RunQuery, asJSON bool) error {
	rep := usageReport{Owner: q.Owner, Thread: q.Thread}
	var err error
	if rep.Usage, rep.Runs, err = trace.SpendOf(ctx, traces, q); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a, rep)
	}
	what := "all recorded runs"
	switch {
	case q.Thread != "" && q.Owner != "":
		what = fmt.Sprintf("thread %s of %s", q.Thread, q.Owner)
	case q.Thread != "":
		what = "thread " + q.Thread
	case q.Owner != "":
		what = "owner " + q.Owner
	}
	fmt.Fprintf(a.stdout, "%s: %d runs, %s\n", what, rep.Runs, rep.Usage)
	return nil
}
