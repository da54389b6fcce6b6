package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/metaprompt"
	"github.com/coorflow/coorflow/workflows"
)

func (a *app) agents(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("agents: want list, show NAME, edit NAME or rm NAME")
	}
	sub, rest := args[0], args[1:]
	fs := newFlags("agents " + sub)
	d := a.addDBFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	prompt := fs.String("prompt", "", "edit: the new system prompt, or @FILE")
	desc := fs.String("description", "", "edit: the new description")
	tier := fs.String("tier", "", "edit: the new model tier (basic, reasoning, vision, code)")
	toolList := fs.String("tools", "", "edit: the new tools, comma-separated (\"\" keeps them; \"-\" removes all)")
	pos, err := a.parse(fs, rest)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		if len(pos) != 0 {
			return usagef("agents list takes no argument")
		}
	case "show", "rm", "edit":
		if len(pos) != 1 {
			return usagef("agents %s: give one agent name", sub)
		}
	default:
		return usagef("agents: unknown subcommand %q%s (want list, show, edit or rm)", sub, didYouMean(sub, []string{"list", "show", "edit", "rm"}))
	}
	base, err := a.openDB(ctx, d.db, sub != "list")
	if err != nil {
		return err
	}
	defer base.Close()
	reg := factory.NewRegistry(base.store, d.owner)
	switch sub {
	case "list":
		return a.listAgents(ctx, reg, *asJSON)
	case "show":
		ag, err := reg.Get(ctx, pos[0])
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(a, ag)
		}
		a.showAgent(ag)
		return nil
	case "rm":
		if err := reg.Remove(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "removed agent %s\n", pos[0])
		return nil
	}
	return a.editAgent(ctx, reg, pos[0], *prompt, *desc, *tier, *toolList)
}

func (a *app) listAgents(ctx context.Context, reg *factory.Registry, asJSON bool) error {
	list, err := reg.List(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a, list)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tKIND\tTIER\tTOOLS\tDESCRIPTION")
	for _, ag := range list {
		kind := "built"
		switch {
		case ag.Builtin && ag.Revision == 0:
			kind = "built-in"
		case ag.Builtin:
			kind = "built-in, edited"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ag.Name, kind, ag.Tier, dash(ag.Tools), oneLine(ag.Description, 70))
	}
	return tw.Flush()
}

func (a *app) showAgent(ag factory.Agent) {
	w := a.stdout
	fmt.Fprintf(w, "agent        %s\n", ag.Name)
	if ag.Role != "" {
		fmt.Fprintf(w, "role         %s\n", ag.Role)
	}
	fmt.Fprintf(w, "description  %s\ntier         %s\ntools        %s\n", ag.Description, ag.Tier, dash(ag.Tools))
	if len(ag.Skills) > 0 {
		fmt.Fprintf(w, "skills       %s\n", dash(ag.Skills))
	}
	if ag.Spec != nil {
		fmt.Fprintf(w, "capabilities %s\ncontribution %s\n", ag.Spec.Capabilities, ag.Spec.Contribution)
	}
	if !ag.Created.IsZero() {
		fmt.Fprintf(w, "created      %s (revision %d)\n", ag.Created.Local().Format("2006-01-02 15:04:05"), ag.Revision)
	}
	if ag.PromptPinned {
		fmt.Fprintln(w, "prompt       pinned (written or fixed by a person)")
	}
	fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(ag.Prompt))
}

// editAgent changes an agent and stores it with compare-and-swap.
func (a *app) editAgent(ctx context.Context, reg *factory.Registry, name, prompt, desc, tier, toolList string) error {
	if prompt == "" && desc == "" && tier == "" && toolList == "" {
		return usagef("agents edit: say what to change: --prompt, --description, --tier or --tools")
	}
	ag, err := reg.Get(ctx, name)
	if err != nil {
		return err
	}
	if prompt != "" {
		text, err := readArg(prompt)
		if err != nil {
			return err
		}
		if probs := metaprompt.Check(text); len(probs) > 0 {
			a.notice("the new prompt of %s does not follow the meta-prompt's rules (kept anyway): %s", name, probs[0].Message)
		}
		ag.Prompt, ag.PromptPinned = text, true
	}
	if desc != "" {
		ag.Description = desc
	}
	if tier != "" {
		t, err := llm.ParseTier(tier)
		if err != nil {
			return usagef("agents edit --tier: %v", err)
		}
		ag.Tier = string(t)
	}
	switch toolList {
	case "":
	case "-":
		ag.Tools = nil
	default:
		ag.Tools = nil
		for _, t := range strings.Split(toolList, ",") {
			if t = strings.TrimSpace(t); t != "" {
				ag.Tools = append(ag.Tools, t)
			}
		}
		if err := checkTools(ctx, reg, ag.Tools); err != nil {
			return err
		}
	}
	ag, err = reg.Update(ctx, ag)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "updated agent %s (revision %d)\n", ag.Name, ag.Revision)
	return nil
}

// checkTools refuses tools an agent cannot be given: known are the
// built-in tools of workflow files and those the registry's agents have
// (tools of Go programs and MCP servers, given to agents built with them).
func checkTools(ctx context.Context, reg *factory.Registry, names []string) error {
	known := workflows.BuiltinTools()
	list, err := reg.List(ctx)
	if err != nil {
		return err
	}
	for _, ag := range list {
		for _, t := range ag.Tools {
			if !slices.Contains(known, t) {
				known = append(known, t)
			}
		}
	}
	slices.Sort(known)
	for _, t := range names {
		if !slices.Contains(known, t) {
			return usagef("agents edit --tools: unknown tool %q%s; the known tools are %s (the built-in tools of workflow files, and those of the registry's agents)",
				t, didYouMean(t, known), strings.Join(known, ", "))
		}
	}
	return nil
}
