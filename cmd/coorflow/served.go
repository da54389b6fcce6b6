package main

import (
	"flag"

	"github.com/coorflow/coorflow/llm"
)

// servedFlags are the flags of the commands that serve workflow files to
// others (serve, mcp, worker): the models they run on, their demo model,
// how their files load, and whether their code may run.
type servedFlags struct {
	models        multiFlag
	demo          *bool
	showModels    *bool
	load          *loadFlags
	allowCodeExec *bool
}

func addServedFlags(fs *flag.FlagSet) *servedFlags {
	f := &servedFlags{}
	fs.Var(&f.models, "model", "TIER=provider:model (repeatable)")
	f.demo = fs.Bool("demo", false, "run every workflow on its demo model (its script, or the reactive demo)")
	f.showModels = fs.Bool("show-models", false, "print each workflow's tiers on stderr: provider, model and endpoint")
	f.load = addLoadFlags(fs)
	f.allowCodeExec = fs.Bool("allow-code-exec", false, "let workflows run code (the python tool), always in a bubblewrap sandbox; off by default")
	return f
}

// servedWorkflows returns the model overrides and the workflow files pos
// names for command cmd, after noting each file it leaves out.
func (a *app) servedWorkflows(cmd string, f *servedFlags, pos []string) (map[llm.Tier]string, []*workflowRef, error) {
	overrides, err := parseModels(f.models)
	if err != nil {
		return nil, nil, err
	}
	files, skipped, err := findWorkflows(pos, f.load.options()...)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range skipped {
		a.notice("%s: left out %s", cmd, s)
	}
	return overrides, files, nil
}
