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

// nodeKind is what a node type brings to a file's graph.
type nodeKind struct {
	// model: the node calls a model, of tier when the node names none
	// (a worker's tier is its agent's).
	model bool
	tier  string
	// channels are the prebuilt channels (typed keys of package nodes)
	// the node reads or writes. A file's graph has the channels of the
	// types its nodes have, and the channels the file declares.
	channels []graph.Channel
}

// nodeKinds are the node types of a file, as the schema lists them.
var nodeKinds = map[string]nodeKind{
	"llm":       {model: true, tier: "basic"},
	"react":     {model: true, tier: "basic"},
	"router":    {},
	"tool":      {},
	"subgraph":  {},
	"go":        {},
	"interrupt": {},
	"coordinator": {model: true, tier: "basic",
		channels: []graph.Channel{nodes.Input, nodes.Messages, nodes.Request, nodes.Locale, nodes.Answer, nodes.CurrentTurn, nodes.Turns}},
	"planner": {model: true, tier: "reasoning",
		channels: []graph.Channel{nodes.Request, nodes.Locale, nodes.Background, nodes.PlanKey, nodes.Iterations, nodes.Feedback, nodes.Findings, nodes.CurrentTurn, nodes.Turns}},
	"human_review": {channels: []graph.Channel{nodes.PlanKey, nodes.Feedback}},
	"team": {model: true, tier: "reasoning",
		channels: []graph.Channel{nodes.PlanKey, nodes.Findings, nodes.CurrentTurn}},
	"reporter": {model: true, tier: "basic",
		channels: []graph.Channel{nodes.Request, nodes.Locale, nodes.PlanKey, nodes.Findings, nodes.Messages, nodes.Answer, nodes.CurrentTurn, nodes.Turns}},
	"background_investigator": {channels: []graph.Channel{nodes.Request, nodes.Background}},
	"research_team":           {channels: []graph.Channel{nodes.PlanKey, nodes.CurrentStep}},
	"worker": {model: true,
		channels: []graph.Channel{nodes.PlanKey, nodes.CurrentStep, nodes.Findings, nodes.CurrentTurn}},
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
