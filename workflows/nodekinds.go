package workflows

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes"
)

// nodeKind is a node type: one entry of nodeKindList, which the schema,
// the checks, the channels of a file's graph and the build all read
// (docs/architecture.md, "How to add a node kind").
type nodeKind struct {
	// name is the node's type, as files write it.
	name string
	// model: the node calls a model, of tier when the node names none
	// (a worker's tier is its agent's).
	model bool
	tier  string
	// startsTasks: the node starts tasks at run time (graph.StartsTasks),
	// as a team builds and runs its agents.
	startsTasks bool
	// channels are the prebuilt channels (typed keys of package nodes)
	// the node reads or writes. A file's graph has the channels of the
	// types its nodes have, and the channels the file declares.
	channels []graph.Channel
	// fields names the schema of the node's fields ($defs.<fields> of
	// the file schema), and fieldsSchema is that schema, as the schema
	// file writes it; withRegistrations writes the node types' enum, the
	// if/then list that requires a node of this type to match it, and
	// the definition.
	fields, fieldsSchema string
	// check records the problems of a node of this type that the schema
	// cannot see, and keeps what it compiles in n; nil: none.
	check func(f *File, ps *problems, n *fileNode)
	// build makes the node's function; nil for subgraph nodes, which
	// addNode adds as subgraphs.
	build func(b *build, n *fileNode) (graph.NodeFunc, error)
	// destinations are the nodes it routes to by itself (graph.Goto);
	// nil: none.
	destinations func(n *fileNode) []string
}

// nodeKindList are the node types of a file, in the order the schema
// lists them.
var nodeKindList []nodeKind

// nodeKinds are the entries of nodeKindList by name.
var nodeKinds map[string]nodeKind

// init fills the table in: its functions refer back to it, which an
// initializer may not.
func init() {
	nodeKindList = []nodeKind{
		{name: "llm", model: true, tier: "basic", fields: "llmNode", fieldsSchema: llmFields,
			check: (*File).checkPromptNode, build: (*build).llmNode},
		{name: "react", model: true, tier: "basic", fields: "reactNode", fieldsSchema: reactFields,
			check: (*File).checkPromptNode, build: (*build).reactNode},
		{name: "coordinator", model: true, tier: "basic", fields: "coordinatorNode", fieldsSchema: coordinatorFields,
			channels: []graph.Channel{nodes.Input, nodes.Messages, nodes.Request, nodes.Locale, nodes.Answer, nodes.CurrentTurn, nodes.Turns},
			check:    (*File).checkNext, build: (*build).coordinator, destinations: nextAndEnd},
		{name: "planner", model: true, tier: "reasoning", fields: "plannerNode", fieldsSchema: plannerFields,
			channels: []graph.Channel{nodes.Request, nodes.Locale, nodes.Background, nodes.PlanKey, nodes.Iterations, nodes.Feedback, nodes.Findings, nodes.CurrentTurn, nodes.Turns},
			check:    (*File).checkPlanner, build: (*build).planner, destinations: plannerNext},
		{name: "human_review", fields: "reviewNode", fieldsSchema: reviewFields,
			channels: []graph.Channel{nodes.PlanKey, nodes.Feedback},
			check:    (*File).checkReview, build: (*build).humanReview, destinations: reviewNext},
		{name: "team", model: true, tier: "reasoning", startsTasks: true, fields: "teamNode", fieldsSchema: teamFields,
			channels: []graph.Channel{nodes.PlanKey, nodes.Findings, nodes.CurrentTurn},
			check:    (*File).checkTeam, build: (*build).team},
		{name: "reporter", model: true, tier: "basic", fields: "reporterNode", fieldsSchema: reporterFields,
			channels: []graph.Channel{nodes.Request, nodes.Locale, nodes.PlanKey, nodes.Findings, nodes.Messages, nodes.Answer, nodes.CurrentTurn, nodes.Turns},
			build:    (*build).reporter},
		{name: "router", fields: "routerNode", fieldsSchema: routerFields,
			check: (*File).checkRouter, build: (*build).router, destinations: routerNext},
		{name: "tool", fields: "toolNode", fieldsSchema: toolNodeFields,
			check: (*File).checkToolNode, build: (*build).toolNode},
		{name: "subgraph", fields: "subgraphNode", fieldsSchema: subgraphFields,
			check: (*File).checkSubgraph},
		{name: "go", fields: "goNode", fieldsSchema: goFields,
			check: (*File).checkGoNode, build: (*build).goNode, destinations: goDestinations},
		{name: "interrupt", fields: "interruptNode", fieldsSchema: interruptFields,
			check: (*File).checkInterrupt, build: (*build).interrupt},
		{name: "background_investigator", fields: "backgroundNode", fieldsSchema: backgroundFields,
			channels: []graph.Channel{nodes.Request, nodes.Background},
			check:    (*File).checkNext, build: (*build).backgroundInvestigator, destinations: nextOnly},
		{name: "research_team", fields: "researchTeamNode", fieldsSchema: researchTeamFields,
			channels: []graph.Channel{nodes.PlanKey, nodes.CurrentStep},
			check:    (*File).checkResearchTeam, build: (*build).researchTeam, destinations: researchTeamNext},
		{name: "worker", model: true, fields: "workerNode", fieldsSchema: workerFields,
			channels: []graph.Channel{nodes.PlanKey, nodes.CurrentStep, nodes.Findings, nodes.CurrentTurn},
			check:    (*File).checkWorker, build: (*build).worker},
	}
	nodeKinds = nodeKindsByName(nodeKindList)
}

func nodeKindsByName(list []nodeKind) map[string]nodeKind {
	m := make(map[string]nodeKind, len(list))
	for _, k := range list {
		m[k.name] = k
	}
	return m
}

// prebuiltChannels returns the channels of package nodes that keep
// accepts, in the order of nodes.Channels.
func prebuiltChannels(keep func(name string) bool) []*channel {
	var out []*channel
	for _, c := range nodes.Channels() {
		if keep(c.Name()) {
			out = append(out, &channel{name: c.Name(), reducer: c.Reducer(), shape: shapeOfType(c.ValueType()), key: c, builtin: true})
		}
	}
	return out
}

// broughtBy returns the names of the prebuilt channels that nodes of
// the types kinds bring.
func broughtBy(kinds []string) map[string]bool {
	out := map[string]bool{}
	for _, kind := range kinds {
		for _, c := range nodeKinds[kind].channels {
			out[c.Name()] = true
		}
	}
	return out
}

// kindsWith returns the node types that bring the prebuilt channel name,
// sorted.
func kindsWith(name string) []string {
	var out []string
	for kind, k := range nodeKinds {
		if slices.ContainsFunc(k.channels, func(c graph.Channel) bool { return c.Name() == name }) {
			out = append(out, kind)
		}
	}
	sort.Strings(out)
	return out
}

// missingPrebuilt explains why name, a prebuilt channel, is not in the
// file's graph; ok is false when name is no prebuilt channel.
func missingPrebuilt(name string) (msg string, ok bool) {
	kinds := kindsWith(name)
	if len(kinds) == 0 {
		return "", false
	}
	return fmt.Sprintf("the prebuilt channel %s is in a file's graph only with a node of type %s, and this file has none: add one, or declare %s under state",
		name, orList(kinds), name), true
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// readsState reports whether the expression src reads state.name.
func readsState(src, name string) bool {
	return regexp.MustCompile(`\bstate\s*\.\s*` + regexp.QuoteMeta(name) + `\b`).MatchString(src)
}
