package graph

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// DecodeInput turns JSON values keyed by channel name into writes, each
// decoded through its channel's type — for inputs that arrive as JSON (an
// HTTP request, a file). An unknown channel is an error that lists the
// channels the graph declares.
func (r *Runnable) DecodeInput(values map[string]json.RawMessage) ([]Write, error) {
	out := make([]Write, 0, len(values))
	for _, name := range sortedKeys(values) {
		ch, _, ok := r.layout.channel(name)
		if !ok {
			return nil, fmt.Errorf("%w %q: graph %q declares %s", ErrUnknownChannel, name, r.name, strings.Join(channelNames(r.layout), ", "))
		}
		v, err := ch.decode(values[name])
		if err != nil {
			return nil, err
		}
		out = append(out, Write{ch: ch, value: v})
	}
	return out, nil
}

// Channels returns the graph's channels, in declaration order.
func (r *Runnable) Channels() []Channel { return slices.Clone(r.layout.channels) }

// Nodes returns the names of the graph's nodes, in the order they were
// added.
func (r *Runnable) Nodes() []string { return slices.Clone(r.order) }

// TaskNodes returns the names of the nodes that start tasks (declared
// with StartsTasks, or subgraph nodes whose graph has such a node), in
// the order they were added.
func (r *Runnable) TaskNodes() []string {
	var out []string
	for _, name := range r.order {
		n := r.nodes[name]
		if n.startsTasks || (n.sub != nil && len(n.sub.TaskNodes()) > 0) {
			out = append(out, name)
		}
	}
	return out
}

// MarshalJSON renders the state as an object of channel values.
func (s State) MarshalJSON() ([]byte, error) { return json.Marshal(s.Values()) }
