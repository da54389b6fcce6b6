package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/agentevent"
	cmemory "github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/workflows"
)

// divergedError is a replay that left its recording: exit code 1.
type divergedError struct {
	run   string
	first trace.Divergence
	n     int
}

func (e *divergedError) Error() string {
	where := e.first.Path
	if where == "" {
		where = "the end of the run"
	}
	n := "1 divergence"
	if e.n != 1 {
		n = fmt.Sprintf("%d divergences", e.n)
	}
	return fmt.Sprintf("the replay of run %s diverged from its recording (%s; the first at %s)", e.run, n, where)
}

// notReplayableError is a run that did not start from an input: exit
// code 2. It is trace.ErrNotReplayable (errors.Is).
type notReplayableError struct{ msg string }

func (e *notReplayableError) Error() string { return e.msg }

func (e *notReplayableError) Unwrap() error { return trace.ErrNotReplayable }

// replay runs a recorded run again offline, every model call answered by
// the recorded response, and reports where it diverged.
func (a *app) replay(ctx context.Context, args []string) error {
	fs := newFlags("replay")
	d := a.addDBFlags(fs)
	wfArg := fs.String("workflow", "", "the workflow to replay the run with (default: the one it ran)")
	input := fs.String("input", "", "replay with another input, TEXT or @FILE, to see where it leads")
	var modelFlags multiFlag
	fs.Var(&modelFlags, "model", "TIER=provider:model (repeatable): the profiles (context windows) the run had")
	demo := fs.Bool("demo", false, "the run had the file's scripted demo model (found from the recording when it did)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("replay: give one run id (coorflow runs list shows them)")
	}
	overrides, err := parseModels(modelFlags)
	if err != nil {
		return err
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
	setInput := flagSet(fs, "input")
	if run.Start != trace.StartInput && !setInput {
		return notReplayable(ctx, traces, run)
	}
	src, err := recordedWorkflow(run, *wfArg, true)
	if err != nil {
		return err
	}
	// The cassette holds the model calls' metadata and reads each call's
	// bodies from the store when it answers it.
	cas, err := trace.OpenCassette(ctx, traces, run.ID)
	if err != nil {
		return err
	}
	r, err := a.replayGraph(ctx, base, src, cas, overrides, *demo)
	if err != nil {
		return err
	}
	var opts []trace.ReplayOption
	if setInput {
		text, err := readArg(*input)
		if err != nil {
			return err
		}
		ws, err := src.file.Input(r, src.file.InputChannel(), text)
		if err != nil {
			return usagef("--input: %v", err)
		}
		opts = append(opts, trace.WithInput(ws...))
	}
	// A saver of its own, so that a run that paused on a question pauses
	// again; the database's threads are not touched. A later turn of a
	// conversation starts from a copy of the thread as the turn found it.
	saver := cmemory.New()
	if start := run.Runtime[runs.RuntimeStart]; start != "" {
		if err := copyCheckpoint(ctx, base.saver, saver, r, run.GraphThread, start); err != nil {
			return fmt.Errorf("run %s started a turn of thread %s from its checkpoint %s, which cannot be read (was the thread deleted?): %w", run.ID, orDash(run.Thread), start, err)
		}
		opts = append(opts, trace.WithRunOptions(graph.DiscardUnfinished()))
	}
	opts = append(opts, trace.WithRunOptions(graph.WithSaver(saver)))
	rep, err := trace.Replay(ctx, r, cas, opts...)
	if err != nil {
		return err
	}
	if *asJSON {
		err = writeJSON(a, rep)
	} else {
		_, err = fmt.Fprintln(a.stdout, rep.String())
	}
	if err != nil || rep.OK() {
		return err
	}
	return &divergedError{run: run.ID, first: rep.Divergences[0], n: len(rep.Divergences)}
}

// copyCheckpoint copies checkpoint id of thread, and the blobs of r's
// channels, from one saver to another, where it is the thread's first.
func copyCheckpoint(ctx context.Context, from, to graph.Saver, r *graph.Runnable, thread, id string) error {
	rec, err := from.GetCheckpoint(ctx, graph.CheckpointRef{Thread: thread, ID: id})
	if err != nil {
		return err
	}
	var names []string
	for _, ch := range r.Channels() {
		names = append(names, ch.Name())
	}
	blobs, err := from.Blobs(ctx, thread, "", names)
	if err != nil {
		return err
	}
	rec.ParentID, rec.Head = "", ""
	return to.PutCheckpoint(ctx, rec, blobs)
}

// notReplayable says which run of the thread can be replayed instead.
func notReplayable(ctx context.Context, traces trace.Store, run trace.RunInfo) error {
	how := "it continued its thread"
	if run.Start == trace.StartResume {
		how = "it answered a question of its thread"
	}
	hint := "replay the run that started the thread"
	if runs, err := traces.Runs(ctx, trace.RunQuery{Thread: run.Thread}); err == nil {
		for _, r := range runs { // newest first: the last one is the first
			if r.Start == trace.StartInput && r.StartedAt.Before(run.StartedAt) {
				hint = "replay the run that started it from its input: coorflow replay " + r.ID
			}
		}
	}
	return &notReplayableError{msg: fmt.Sprintf("run %s cannot be replayed: it did not start from an input (%s, thread %s); %s", run.ID, how, orDash(run.Thread), hint)}
}

// replayGraph compiles the workflow for a replay: every tier answered by
// the cassette with the profiles the run had, and fresh in-memory stores,
// so that the agents the run built are built again from the recording.
// The agents it reused from the registry (not built in it) are copied in
// as it recorded them. The demo model's profiles are used when demo is set
// or the recording says the demo model answered.
func (a *app) replayGraph(ctx context.Context, base *db, src *workflowRef, cas *trace.Cassette, overrides map[llm.Tier]string, demo bool) (*graph.Runnable, error) {
	if !demo {
		var err error
		if demo, err = ranOnDemo(ctx, cas); err != nil {
			return nil, err
		}
	}
	ms, err := src.file.Resolve(ctx, workflows.ModelOptions{Getenv: a.getenv, Overrides: overrides, Demo: demo})
	if err != nil {
		return nil, err
	}
	var like interface{ Profile(llm.Tier) llm.Profile }
	if ms.Models != nil {
		like = ms.Models
	}
	models, err := cas.Models(like)
	if err != nil {
		return nil, err
	}
	run := cas.Run()
	owner := run.Owner
	if owner == "" {
		owner = "default"
	}
	st := memory.New(store.Config{})
	if err := seedReused(ctx, cas, factory.NewRegistry(base.store, owner), factory.NewRegistry(st, owner)); err != nil {
		return nil, err
	}
	environ, err := replayEnvironment(run)
	if err != nil {
		return nil, err
	}
	r, err := src.file.Compile(ctx, environ.apply(workflows.Env{Models: models, Store: st, Owner: owner, Getenv: a.getenv, MCP: a.mcpHub()}, src))
	if err != nil {
		return nil, err
	}
	if lacks := missingTools(environ.desc.LeftOut, environ.left.of(src.ref)); len(lacks) > 0 {
		a.notice("replay: the run had %s, which this replay is without (a key unset, a server unreachable): its models are shown fewer tools, so expect divergences",
			strings.Join(lacks, ", "))
	}
	return r, nil
}

// missingTools are the optional tools and MCP servers a replay's compile
// left out (now) that the run it replays had (not in recorded, what its
// compile left out).
func missingTools(recorded, now []string) []string {
	var out []string
	for _, name := range now {
		if !slices.Contains(recorded, name) {
			out = append(out, name)
		}
	}
	return out
}

// seedReused copies into to the agents that the recorded run used but did
// not build (reused from the registry): as the recording's agent_reused
// events have them, or, for a run recorded before those, as from holds
// them now; built-in agents that nobody edited are there already. It reads
// the recording's agent events a page at a time.
func seedReused(ctx context.Context, cas *trace.Cassette, from, to *factory.Registry) error {
	built, used := map[string]bool{}, map[string]bool{}
	reused := map[string]agentevent.Info{}
	var shown []agentevent.DirectoryEntry
	seen := map[string]bool{}
	kinds := []string{agentevent.EventDirectory, agentevent.EventCreated, agentevent.EventStart, agentevent.EventReused}
	for e, err := range cas.Events(ctx, trace.EventQuery{Kinds: kinds}) {
		if err != nil {
			return fmt.Errorf("read the agents of run %s: %w", cas.Run().ID, err)
		}
		switch e.Kind {
		case agentevent.EventDirectory:
			var dir agentevent.Directory
			if json.Unmarshal(e.Payload, &dir) == nil {
				for _, a := range dir.Agents {
					if !seen[a.Name] {
						seen[a.Name] = true
						shown = append(shown, a)
					}
				}
			}
		case agentevent.EventCreated:
			built[e.Agent] = true
		case agentevent.EventStart:
			used[e.Agent] = true
		case agentevent.EventReused:
			var info agentevent.Info
			if json.Unmarshal(e.Payload, &info) == nil && info.System != "" {
				reused[info.Agent] = info
			}
		}
	}
	if err := seedShown(ctx, to, shown, built); err != nil {
		return err
	}
	for name := range used {
		if built[name] || name == "" {
			continue
		}
		if info, ok := reused[name]; ok {
			if err := seedRecorded(ctx, to, info); err != nil {
				return err
			}
			continue
		}
		a, err := from.Get(ctx, name)
		if errors.Is(err, factory.ErrAgentNotFound) || (err == nil && a.Builtin && a.Revision == 0) {
			continue
		}
		if err != nil {
			return err
		}
		if _, err := to.Add(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// seedShown puts into to the agents a recorded planner was shown (its
// agent_directory events) that the run did not build, as it was shown
// them: by name and description, which is all a planner sees. Those the
// run used are then replaced with the whole agent it recorded.
func seedShown(ctx context.Context, to *factory.Registry, shown []agentevent.DirectoryEntry, built map[string]bool) error {
	for _, s := range shown {
		if built[s.Name] || s.Name == "" {
			continue
		}
		a, err := to.Get(ctx, s.Name)
		switch {
		case errors.Is(err, factory.ErrAgentNotFound):
			_, err = to.Add(ctx, factory.Agent{Name: s.Name, Description: s.Description})
		case err != nil:
		case a.Description != s.Description:
			a.Description = s.Description
			_, err = to.Update(ctx, a)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// seedRecorded puts into to an agent as a recording has it: added, or
// in place of the built-in agent of that name unless the same.
func seedRecorded(ctx context.Context, to *factory.Registry, info agentevent.Info) error {
	a, err := to.Get(ctx, info.Agent)
	switch {
	case errors.Is(err, factory.ErrAgentNotFound):
		a = factory.Agent{Name: info.Agent}
	case err != nil:
		return err
	case a.Prompt == info.System && a.Tier == info.Tier && slices.Equal(a.Tools, info.Tools):
		return nil
	}
	a.Role, a.Description, a.Tier, a.Tools, a.Prompt, a.PromptPinned = info.Role, info.Summary, info.Tier, info.Tools, info.System, true
	if errors.Is(err, factory.ErrAgentNotFound) {
		_, err = to.Add(ctx, a)
	} else {
		_, err = to.Update(ctx, a)
	}
	return err
}

// ranOnDemo reports whether the recorded run's model calls were answered
// by a file's scripted demo model, as its first model call says.
func ranOnDemo(ctx context.Context, cas *trace.Cassette) (bool, error) {
	for e, err := range cas.Events(ctx, trace.EventQuery{Kinds: []string{llm.EventModelCall}, Limit: 1}) {
		if err != nil {
			return false, fmt.Errorf("read the model calls of run %s: %w", cas.Run().ID, err)
		}
		var mc llm.ModelCall
		return json.Unmarshal(e.Payload, &mc) == nil && mc.Model == "demo", nil
	}
	return false, nil
}
