package graph

// Command is what a node returns: writes to apply, and where the run goes
// next.
//
// Routing: when Goto is nil, the node's outgoing edges (static, conditional
// and join) decide what runs next. When Goto is non-nil, it replaces all of
// them for this run of the node: only the nodes it names run next (an empty
// non-nil Goto, or one naming End, ends this branch). LangGraph differs
// here: there a Command's goto runs in addition to the node's static edges,
// so a node that routes explicitly must have no static edges. In coorflow a
// node may have a default edge and override it with Goto when it needs to.
//
// Send starts one task per packet in the next step, whatever the routing.
// A Send packet for End is an error: End runs nothing, so its writes would
// be lost; end a branch with Goto(End).
//
// Build a command with one of Goto, GotoAll, Update or Send, then add to it
// with With (writes) and WithSend (packets):
//
//	graph.Send(packets...).With(status.Set("fanned out"))
//	graph.Goto("review", draft.Set(d)).WithSend(packets...)
type Command struct {
	// Goto, when non-nil, names the next nodes and replaces the node's
	// outgoing edges for this run.
	Goto []string
	// Update holds writes, applied through each channel's reducer.
	Update []Write
	// Send holds packets: each starts one task of its node in the next step.
	Send []Packet
}

// Packet starts one task of Node whose view of the state includes Writes.
// The writes form a private overlay: only that task sees them, and they are
// not written to the graph's state.
type Packet struct {
	Node   string
	Writes []Write
}

// Goto returns a command that writes writes and continues at node only,
// instead of the node's own edges. Goto(End) ends the branch; it is valid
// from any node, whatever its Destinations.
func Goto(node string, writes ...Write) Command {
	return Command{Goto: []string{node}, Update: writes}
}

// GotoAll returns a command that writes writes and continues at every node
// in nodes, in the same next step.
func GotoAll(nodes []string, writes ...Write) Command {
	if nodes == nil {
		nodes = []string{}
	}
	return Command{Goto: nodes, Update: writes}
}

// Update returns a command that writes writes and follows the node's edges.
func Update(writes ...Write) Command {
	return Command{Update: writes}
}

// Send returns a command that starts one task per packet and follows the
// node's edges. Add writes with With; to route explicitly as well, start
// from Goto or GotoAll and add the packets with WithSend.
func Send(packets ...Packet) Command {
	return Command{Send: packets}
}

// With returns c with writes added after its own: Send(packets...).With(w)
// fans out and writes w. c is not changed.
func (c Command) With(writes ...Write) Command {
	c.Update = append(c.Update[:len(c.Update):len(c.Update)], writes...)
	return c
}

// WithSend returns c with packets added after its own:
// Goto(node, w).WithSend(packets...) routes, writes and fans out. c is not
// changed.
func (c Command) WithSend(packets ...Packet) Command {
	c.Send = append(c.Send[:len(c.Send):len(c.Send)], packets...)
	return c
}

// To returns a packet for node carrying writes.
func To(node string, writes ...Write) Packet {
	return Packet{Node: node, Writes: writes}
}
