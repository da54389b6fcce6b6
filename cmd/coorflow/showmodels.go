package main

import (
	"strings"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/workflows"
)

// showModels prints, on stderr, the table of how each tier resolved
// (provider, model, endpoint and what chose them): when asked
// (--show-models), and unasked when the resolution is surprising — the
// environment or --model left the tiers on different providers or
// endpoints (llm.Surprising). what names the workflow for serve and mcp,
// which resolve several; "" for run.
func (a *app) showModels(what string, ms *workflows.Models, asked bool) {
	prefix := "models"
	if what != "" {
		prefix = what + ": models"
	}
	rs := ms.Resolved()
	switch {
	case ms.Demo:
		if asked {
			a.notice("%s: every tier: %s", prefix, ms.Describe())
		}
	case len(rs) == 0:
		if asked {
			a.notice("%s: none (no node calls a model)", prefix)
		}
	case asked:
		a.notice("%s:\n%s", prefix, strings.TrimRight(llm.FormatResolved(rs), "\n"))
	case llm.Surprising(rs):
		a.notice("%s: the environment or --model left the tiers on different providers or endpoints; check this is what you meant:\n%s",
			prefix, strings.TrimRight(llm.FormatResolved(rs), "\n"))
	}
}

// demoName names the demo model that serves a file, for notices.
func demoName(ms *workflows.Models) string {
	if ms.Script != "" && len(ms.ScriptFor) > 0 {
		return "the scripted demo model " + ms.Script + " (written for requests naming " + strings.Join(ms.ScriptFor, " and ") +
			"; the reactive demo model answers any other request from what it asks)"
	}
	if ms.Script != "" {
		return "the scripted demo model " + ms.Script
	}
	return "the reactive demo model, which plays each role from your request"
}
