package workflows

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/factory"
)

// The reserved names that edges use for the entry and the exit.
const (
	startName = "start"
	endName   = "end"
)

var nodeName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// check runs the checks that need more than the schema: names, references,
// types, expressions and the shape of the graph.
func (f *File) check(ps *problems) {
	f.checkEnvRefs(ps)
	f.declareChannels(ps)
	f.scope = newScope(f.chans, f.spec.Config)
	f.checkIO(ps)
	f.checkDemo(ps)
	f.checkTools(ps)
	f.checkContexts(ps)
	f.checkSkills(ps)
	f.checkNodes(ps)
	f.checkModels(ps)
	f.checkEdges(ps)
	if !f.unsureGraph {
		f.checkShape(ps) // with the other problems, in the same pass
	}
}

// declareChannels gives the file's graph its channels: the prebuilt
// ones of its node types, and those the file declares. A declared channel
// named like a prebuilt one is that channel when one of the file's node
// types brings it (and must then match it) or when the declaration fits
// it; otherwise the name is free, and the channel is the file's own (a
// file without a planner may declare plan: {type: string}).
func (f *File) declareChannels(ps *problems) {
	kinds := make([]string, len(f.spec.nodes))
	for i, n := range f.spec.nodes {
		kinds[i] = n.Spec.Type
	}
	brought := broughtBy(kinds)
	all := byChannelName(prebuiltChannels(func(string) bool { return true }))
	want := maps.Clone(brought)
	for _, c := range f.spec.channels {
		if b, ok := all[c.Name]; ok && fitsPrebuilt(c, b) {
			want[c.Name] = true
		}
	}
	f.chans = prebuiltChannels(func(name string) bool { return want[name] })
	f.byName = byChannelName(f.chans)
	prebuilt := byChannelName(f.chans)
	for _, c := range f.spec.channels {
		if ch := declareChannel(ps, f.doc, c, prebuilt, kinds); ch != nil {
			f.chans = append(f.chans, ch)
			f.byName[ch.name] = ch
		}
	}
}

func byChannelName(chs []*channel) map[string]*channel {
	m := make(map[string]*channel, len(chs))
	for _, c := range chs {
		m[c.name] = c
	}
	return m
}

// channelRef checks that the entry at ptr names a channel.
func (f *File) channelRef(ps *problems, ptr, name string) *channel {
	if c, ok := f.byName[name]; ok {
		return c
	}
	l := f.doc.loc(ptr)
	if why, ok := missingPrebuilt(name); ok {
		ps.at(l.val, l.path, "unknown channel %q: %s", name, why)
		return nil
	}
	hint := suggest(name, f.channelNames(), "declare it under state, or use one of")
	if hint == "" {
		hint = " (declare it under state)"
	}
	ps.at(l.val, l.path, "unknown channel %q%s", name, hint)
	return nil
}

func (f *File) channelNames() []string {
	out := make([]string, len(f.chans))
	for i, c := range f.chans {
		out[i] = c.name
	}
	return out
}

func (f *File) checkIO(ps *problems) {
	if f.spec.Input != "" {
		f.channelRef(ps, "/input", f.spec.Input)
	}
	if f.spec.Output != "" {
		f.channelRef(ps, "/output", f.spec.Output)
	}
}

func (f *File) checkDemo(ps *problems) {
	if f.spec.Demo == nil {
		return
	}
	if _, err := f.readDemoScript(); err != nil {
		l := f.doc.loc("/demo/script")
		ps.at(l.val, l.path, "%v", err)
	}
}

func (f *File) checkTools(ps *problems) {
	f.tools = map[string]named[toolSpec]{}
	for _, t := range f.spec.tools {
		f.tools[t.Name] = t
		l := f.doc.loc(t.Ptr)
		builtin, isBuiltin := lookupBuiltinTool(t.Name)
		switch {
		case isBuiltin:
		case f.opts.tools != nil && hasTool(f.opts.tools.Names(), t.Name):
		case f.opts.unregistered:
		default:
			known := BuiltinTools()
			if f.opts.tools != nil {
				known = append(slices.Clone(known), f.opts.tools.Names()...)
			}
			ps.at(l.key, l.path, "unknown tool %q%s; tools written in Go must be registered by the program that runs the file", t.Name, suggest(t.Name, known, "the tools available are"))
			continue
		}
		if isBuiltin && builtin.check != nil {
			builtin.check(f, ps, t)
		}
	}
}

func hasTool(names []string, name string) bool { return slices.Contains(names, name) }

// toolRefs checks that the tools a node names are declared.
func (f *File) toolRefs(ps *problems, n named[nodeSpec]) {
	for i, t := range n.Spec.Tools {
		if msg := f.ambiguousMCP(t); msg != "" {
			l := f.doc.loc(fmt.Sprintf("%s/tools/%d", n.Ptr, i))
			ps.at(l.val, l.path, "%s", msg)
			continue
		}
		if f.knowsTool(t) {
			continue
		}
		l := f.doc.loc(fmt.Sprintf("%s/tools/%d", n.Ptr, i))
		ps.at(l.val, l.path, "unknown tool %q%s", t, suggest(t, f.toolChoices(), "the file declares"))
	}
}

func (f *File) checkModels(ps *problems) {
	if len(f.spec.Models) == 0 {
		return
	}
	if _, ok := f.spec.Models["basic"]; ok {
		return
	}
	var users []string
	for _, n := range f.allNodes() {
		if f.tierOf(n) == "basic" {
			users = append(users, n.Name)
		}
	}
	l := f.doc.loc("/models")
	msg := "the basic tier is missing: every models section needs basic, which the other tiers fall back to"
	if len(users) > 0 {
		msg += fmt.Sprintf(" (and node %s uses it)", quoteList(users))
	}
	ps.at(l.key, l.path, "%s", msg)
}

// tierOf returns the tier a node's model calls use.
func (f *File) tierOf(n *fileNode) string {
	if n.Spec.Tier != "" {
		return n.Spec.Tier
	}
	if n.Spec.Type == "worker" {
		if a, ok := defaultAgent(n.Spec.Agent); ok {
			return a.Tier
		}
		return "basic"
	}
	return nodeKinds[n.Spec.Type].tier
}

func defaultAgent(name string) (factory.Agent, bool) {
	for _, a := range factory.DefaultAgents() {
		if a.Name == name {
			return a, true
		}
	}
	return factory.Agent{}, false
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
