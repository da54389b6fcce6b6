package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/workflows"
)

// export writes a finished dynamic run as a workflow file with its plan
// and agents fixed: CoorAgent's production mode.
func (a *app) export(ctx context.Context, args []string) error {
	fs := newFlags("export")
	d := a.addDBFlags(fs)
	out := fs.String("o", "", "write the workflow to FILE (default: stdout)")
	wfArg := fs.String("workflow", "", "the workflow the run ran, when the recording's cannot be found")
	name := fs.String("name", "", "the exported workflow's name (default <workflow>-<run>)")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("export: give one run id (coorflow runs list shows them)")
	}
	base, err := a.openDB(ctx, d.db, true)
	if err != nil {
		return err
	}
	defer base.Close()
	traces, err := base.traceStore(ctx)
	if err != nil {
		return err
	}
	run, err := loadRun(ctx, base, traces, pos[0])
	if err != nil {
		return err
	}
	plan, err := finishedPlan(run)
	if err != nil {
		return err
	}
	src, err := recordedWorkflow(run, *wfArg, false)
	if err != nil {
		return err
	}
	if err := hasTeam(run, src); err != nil {
		return err
	}
	agents, err := recordedAgents(ctx, traces, run, plan)
	if err != nil {
		return err
	}
	p := production(run, plan, agents, *name)
	path := *out
	if path == "" {
		path = p.Name + ".yaml" // names the file in problems; the YAML goes to stdout
	}
	var skipped string
	if p.Demo, skipped, err = demoFrom(src.file, path); err != nil {
		return err
	}
	if skipped != "" {
		a.notice("the export has no demo script: %s is outside the directory of %s, where a workflow may not read one; "+
			"copy it there and add demo: {script: NAME} to run the export offline", skipped, path)
	}
	data, err := src.file.Export(path, p)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = a.stdout.Write(data)
		return err
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "wrote %s: workflow %s, plan %q with %d steps and %d agents (%s); no coordinator, planner or builder\nrun it on new input: coorflow run %s --input '…'\n",
		*out, p.Name, plan.Title, len(plan.Steps), len(agents), agentNames(agents), shellQuote(*out))
	return nil
}

// finishedPlan returns the plan of a run that finished with every step
// done, or says exactly why the run cannot be exported.
func finishedPlan(run trace.RunInfo) (*plan.Plan, error) {
	switch run.Status {
	case trace.StatusDone:
	case trace.StatusInterrupted:
		return nil, usagef("run %s did not finish: it waits for an answer; answer it (coorflow run WORKFLOW --thread %s --resume ANSWER) and export the run that finishes the thread", run.ID, run.Thread)
	case trace.StatusCancelled:
		return nil, usagef("run %s did not finish: it was cancelled; continue its thread (coorflow run WORKFLOW --thread %s) and export the run that finishes it", run.ID, run.Thread)
	case trace.StatusError:
		return nil, usagef("run %s did not finish: it failed (%s)", run.ID, oneLine(run.Error, 160))
	default:
		return nil, usagef("run %s did not finish (status %s: it is still running, or its process stopped before it ended)", run.ID, run.Status)
	}
	var state map[string]json.RawMessage
	if err := json.Unmarshal(run.FinalState, &state); err != nil || len(state["plan"]) == 0 || string(state["plan"]) == "null" {
		return nil, usagef("run %s made no plan (its workflow %s has no planner, or the coordinator answered the request itself): there is no plan to fix", run.ID, run.Graph)
	}
	var p plan.Plan
	if err := json.Unmarshal(state["plan"], &p); err != nil {
		return nil, fmt.Errorf("run %s: its plan is not readable: %w", run.ID, err)
	}
	if len(p.Steps) == 0 {
		return nil, usagef("run %s's plan %q has no steps (the planner found that enough was known): there is nothing to fix", run.ID, p.Title)
	}
	for _, s := range p.Steps {
		switch {
		case s.Result == nil:
			return nil, usagef("step %s of run %s never ran: export a run whose steps all finished", s.ID, run.ID)
		case s.Result.Status != plan.StepDone:
			why := s.Result.Error
			if why == "" {
				why = "a step it depends on failed"
			}
			return nil, usagef("step %s of run %s did not finish (%s: %s): export a run whose steps all finished", s.ID, run.ID, s.Result.Status, oneLine(why, 120))
		}
	}
	return &p, nil
}

// hasTeam checks that the run's workflow carries out plans with a team
// node, whose agents a plan defines: a dynamic workflow.
func hasTeam(run trace.RunInfo, src *workflowRef) error {
	var others []string
	for _, n := range src.file.Nodes() {
		switch t := src.file.NodeType(n); t {
		case "team":
			return nil
		case "research_team", "worker":
			others = append(others, fmt.Sprintf("%s (%s)", n, t))
		}
	}
	how := "nothing builds agents for its plans"
	if len(others) > 0 {
		how = "its plans are run by predefined roles: " + strings.Join(others, ", ")
	}
	return usagef("run %s is not a run of a dynamic workflow: %s has no team node (%s); export fixes the plans and agents of workflows such as coor", run.ID, src.arg, how)
}

// recordedWorkflow loads the workflow a run ran: the one given, or the one
// the recording names (a file, builtin:NAME, or a name the server served).
// toRun refuses files that need Go tools or functions.
func recordedWorkflow(run trace.RunInfo, given string, toRun bool) (*workflowRef, error) {
	ref := given
	if ref == "" {
		ref = run.Workflow
		if env, ok, _ := runs.DecodeEnv(run.Runtime[runs.RuntimeEnv]); ok && env.Workflow != "" {
			ref = env.Workflow // a served run is known by its name; its environment names its file
		}
		_, err := os.Stat(ref)
		switch {
		case strings.HasPrefix(ref, "builtin:") || err == nil:
		case isBuiltin(ref):
			ref = "builtin:" + ref
		default:
			return nil, usagef("run %s ran workflow %q, which is not a file here: give it with --workflow FILE", run.ID, orDash(run.Workflow))
		}
	}
	load := loadWorkflow
	if toRun {
		load = runnable
	}
	wf, err := load(ref)
	if err != nil {
		return nil, err
	}
	if run.Graph != "" && wf.file.Name() != run.Graph {
		return nil, usagef("run %s ran workflow %s; %s is workflow %s", run.ID, run.Graph, wf.arg, wf.file.Name())
	}
	return wf, nil
}

// recordedAgents returns the agents that ran the plan's steps, in step
// order, as the run used them: from its recording (the agent_created
// event of an agent it built, the agent_reused event of one it took from
// the registry), never from the registry, which may have changed since.
func recordedAgents(ctx context.Context, traces trace.Store, run trace.RunInfo, p *plan.Plan) ([]factory.Agent, error) {
	used := map[string]agentevent.Info{}
	q := trace.EventQuery{Kinds: []string{agentevent.EventCreated, agentevent.EventReused}}
	for e, err := range trace.AllEvents(ctx, traces, run.ID, q) {
		if err != nil {
			return nil, err
		}
		var info agentevent.Info
		if json.Unmarshal(e.Payload, &info) == nil && info.System != "" {
			used[info.Agent] = info
		}
	}
	var out []factory.Agent
	for _, s := range p.Steps {
		if slices.ContainsFunc(out, func(a factory.Agent) bool { return a.Name == s.AgentName }) {
			continue
		}
		u, ok := used[s.AgentName]
		if !ok {
			return nil, usagef("run %s's recording does not say how agent %s, which ran step %s, was defined (a run recorded before coorflow recorded its agents): export a newer run", run.ID, s.AgentName, s.ID)
		}
		out = append(out, factory.Agent{Name: u.Agent, Role: u.Role, Description: u.Summary, Tier: u.Tier, Tools: u.Tools, Prompt: u.System})
	}
	return out, nil
}

// production is what the exported file fixes.
func production(run trace.RunInfo, plan *plan.Plan, agents []factory.Agent, name string) workflows.Production {
	if name == "" {
		name = run.Graph + "-" + run.ID
	}
	var state map[string]json.RawMessage
	_ = json.Unmarshal(run.FinalState, &state)
	var request []string
	for _, ch := range []string{"input", "request"} {
		var s string
		if json.Unmarshal(state[ch], &s) == nil && s != "" {
			request = append(request, s)
		}
	}
	return workflows.Production{
		Name:        name,
		Description: fmt.Sprintf("The plan %q of run %s, with its agents, fixed: it runs on new input without a coordinator, planner or agent builder.", plan.Title, run.ID),
		Comment: fmt.Sprintf(`Exported by coorflow export from run %s (workflow %s, thread %s).
CoorAgent's production mode: the plan and the agents that ran its steps are
written out below; no coordinator, planner or agent builder runs, and the
agent registry is neither read nor written. --input fills the request
channel: each step reads it as %s (where the original
request was, or in a closing "# Request" section) and the reporter answers it.
Edit it by hand (prompts, steps, tiers, tools), then: coorflow validate FILE`,
			run.ID, run.Graph, run.Thread, workflows.RequestPlaceholder),
		Plan: plan, Agents: agents, Request: request,
	}
}

// demoFrom returns the source's demo script relative to the exported
// file at path, or "" when the source has none. A script outside the
// exported file's directory tree, which the export could not read, is
// left out: skipped names it.
func demoFrom(src *workflows.File, path string) (rel, skipped string, err error) {
	script := src.DemoScript()
	if script == "" {
		return "", "", nil
	}
	absScript, err := filepath.Abs(script)
	if err != nil {
		return "", "", err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return "", "", err
	}
	rel, err = filepath.Rel(dir, absScript)
	if err != nil || !filepath.IsLocal(rel) {
		return "", script, nil
	}
	return filepath.ToSlash(rel), "", nil
}

func agentNames(agents []factory.Agent) string {
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}
