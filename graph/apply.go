package graph

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
)

// apply writes the tasks' updates into a new version of the state, in task
// order, with one reducer application per channel.
func (ru *run) apply(tasks []*task, results []taskResult) error {
	l := ru.r.layout
	defer ru.clearPending()
	for i, t := range tasks {
		for _, w := range results[i].cmd.Update {
			ch, slot, ok := l.channelOf(w)
			if !ok {
				return ru.writeErr(t, results[i].attempts, fmt.Errorf("%w %q: graph %q declares %s",
					ErrUnknownChannel, w.Channel(), ru.r.name, strings.Join(channelNames(l), ", ")))
			}
			v, err := ch.convert(w.value)
			if err != nil {
				return ru.writeErr(t, results[i].attempts, err)
			}
			if len(ru.pend[slot]) == 0 { // room for a write from each task
				ru.pend[slot] = slices.Grow(ru.pend[slot], len(tasks))
			}
			ru.pend[slot] = append(ru.pend[slot], v)
			if ch.Reducer() == "last" { // names the writers of a conflict
				ru.pendBy[slot] = append(ru.pendBy[slot], t.label)
			}
		}
	}
	var next *stateData
	for slot, writes := range ru.pend {
		if len(writes) == 0 {
			continue
		}
		ch := l.channels[slot]
		if len(writes) > 1 && ch.Reducer() == "last" {
			return &WriteConflictError{Channel: ch.Name(), Step: ru.step, Writers: slices.Clone(ru.pendBy[slot])}
		}
		if next == nil {
			next = ru.state.clone()
		}
		cur := next.vals[slot]
		next.vals[slot] = ch.reduce(cur, cur != nil, writes)
		if ru.p != nil {
			ru.changes = append(ru.changes, change{slot: slot, writes: slices.Clone(writes), had: cur != nil})
		}
		if ru.record != nil && ru.shared[ch.Name()] {
			for _, w := range writes {
				ru.record(Write{ch: ch, value: w})
			}
		}
	}
	if next != nil {
		ru.state = next
	}
	return nil
}

// writeErr reports a bad write: a node's, or the run's input.
func (ru *run) writeErr(t *task, attempt int, err error) error {
	if t.name == Start {
		return fmt.Errorf("graph: invalid input: %w", err)
	}
	return ru.nodeErr(t, attempt, err)
}

func (ru *run) clearPending() {
	for i := range ru.pend {
		if len(ru.pend[i]) > 0 {
			clear(ru.pend[i])
			ru.pend[i] = ru.pend[i][:0]
			ru.pendBy[i] = ru.pendBy[i][:0]
		}
	}
}

func channelNames(l *layout) []string {
	out := make([]string, len(l.channels))
	for i, c := range l.channels {
		out[i] = fmt.Sprintf("%q", c.Name())
	}
	return out
}

// route schedules the next step from the tasks of this one, in task order:
// Goto targets, or else static edges, conditional edges and joins; then
// Send packets. The commands were checked when their nodes returned them
// (checkCommand), or when they were read back from the saver.
func (ru *run) route(tasks []*task, results []taskResult) error {
	s := &ru.sched
	sends, senders := 0, 0
	for i := range results {
		if n := len(results[i].cmd.Send); n > 0 {
			sends, senders = sends+n, senders+1
		}
	}
	if senders > 1 {
		s.packets = slices.Grow(s.packets, sends)
	}
	for i, t := range tasks {
		cmd := results[i].cmd
		if cmd.Goto != nil {
			for _, to := range cmd.Goto {
				ru.trigger(to)
			}
		} else if err := ru.follow(t); err != nil {
			return ru.nodeErr(t, results[i].attempts, err)
		}
		if senders == 1 && len(s.packets) == 0 {
			// The step's only packets are taken as the node returned
			// them, clipped: nothing appends into the node's list.
			s.packets = slices.Clip(cmd.Send)
		} else {
			s.packets = append(s.packets, cmd.Send...)
		}
	}
	return nil
}

// follow schedules the outgoing edges of t's node.
func (ru *run) follow(t *task) error {
	out := ru.r.outgoing(t)
	for _, to := range out.to {
		ru.triggerNode(to)
	}
	for _, b := range out.branches {
		label, err := ru.callRouter(t, b.route)
		if err != nil {
			return fmt.Errorf("router: %w", err)
		}
		to, ok := b.ends[label]
		if !ok {
			return fmt.Errorf("%w: the router of the conditional edge from %q returned %q, which is not one of its labels (%s)",
				ErrUnknownBranch, t.name, label, quoteJoin(sortedKeys(b.ends)))
		}
		ru.trigger(to)
	}
	for _, ji := range out.joins {
		j := ru.r.joins[ji]
		seen := ru.sched.seen[ji]
		seen[slices.Index(j.sources, t.name)] = true
		if !slices.Contains(seen, false) {
			clear(seen)
			ru.trigger(j.to)
		}
	}
	return nil
}

// outgoing returns where the edges from t's node lead: resolved by Compile
// for the graph's nodes (t.node comes from r.nodes) and Start, looked up
// for any other writer.
func (r *Runnable) outgoing(t *task) *outgoing {
	if t.node != nil {
		return &t.node.out
	}
	if t.name == Start {
		return &r.start
	}
	out := r.outgoingOf(t.name)
	return &out
}

func (ru *run) callRouter(t *task, route Router) (label string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: string(debug.Stack())}
		}
	}()
	return route(ru.routerContext(t), State{d: ru.state})
}

// routerContext returns the context a router runs with: the run's,
// carrying an emitter for t. Routers run one at a time on the loop's
// goroutine, so every call uses the same one, kept in the run. The
// context is set once (ru.ctx does not change after the run starts), so
// that whatever a router left holding it (a connection's goroutine) sees
// no writes.
func (ru *run) routerContext(t *task) context.Context {
	em := &ru.routeEm
	if em.r == nil {
		em.Context, em.r = ru.ctx, ru
	}
	em.path, em.node, em.step = t.path, t.name, ru.step
	return em
}

// checkCommand checks the routing of a command node returned: Goto names
// End or nodes the graph has, Send packets are for nodes (never End) and
// write channels the graph declares, and both stay within what the node
// declared with Destinations and Sends. With node nil (a command read back
// from the saver) only the graph is checked.
func (r *Runnable) checkCommand(node *nodeSpec, cmd Command) error {
	for _, to := range cmd.Goto {
		if to != End {
			if err := r.checkTarget(node, to, "Goto"); err != nil {
				return err
			}
		}
	}
	for i, p := range cmd.Send {
		if p.Node == End {
			return fmt.Errorf("%w: Send packet %d is for End, which runs nothing: send it to a node, or end the branch with graph.Goto(graph.End)",
				ErrInvalidCommand, i)
		}
		if i == 0 || p.Node != cmd.Send[i-1].Node { // else checked for the packet before
			if err := r.checkTarget(node, p.Node, "Send"); err != nil {
				return err
			}
		}
		if err := r.checkPacket(node, p); err != nil {
			return err
		}
	}
	return nil
}

// checkTarget checks a node named by Goto or Send: it must exist and, when
// the node declared destinations, be one of them.
func (r *Runnable) checkTarget(node *nodeSpec, to, how string) error {
	if r.nodes[to] == nil {
		return fmt.Errorf("%w: %s to %q, which graph %q does not have", ErrUnknownNode, how, to, r.name)
	}
	if node != nil && len(node.destinations) > 0 && !slices.Contains(node.destinations, to) {
		return fmt.Errorf("%w: %s to %q, which is not among the node's destinations (%s)",
			ErrUnknownNode, how, to, strings.Join(node.destinations, ", "))
	}
	return nil
}

// checkPacket checks that a packet writes channels the graph declares and,
// when the node declared the packet's channels with Sends, only those.
func (r *Runnable) checkPacket(node *nodeSpec, p Packet) error {
	for _, w := range p.Writes {
		name := w.Channel()
		if _, _, ok := r.layout.channelOf(w); !ok {
			return fmt.Errorf("%w %q in a packet for %q: graph %q declares %s",
				ErrUnknownChannel, name, p.Node, r.name, strings.Join(channelNames(r.layout), ", "))
		}
		if node == nil || node.sends == nil {
			continue
		}
		if keys, ok := node.sends[p.Node]; ok && !slices.ContainsFunc(keys, func(k Channel) bool { return k.Name() == name }) {
			return fmt.Errorf("%w %q in a packet for %q: the node declared its packets for %q with %s (graph.Sends)",
				ErrUnknownChannel, name, p.Node, p.Node, quoteJoin(channelNamesOf(keys)))
		}
	}
	return nil
}

func channelNamesOf(chs []Channel) []string {
	out := make([]string, len(chs))
	for i, c := range chs {
		out[i] = c.Name()
	}
	return out
}

// trigger schedules node to run in the next step (once, however often it
// is triggered), or after everything else if it is deferred.
func (ru *run) trigger(node string) {
	if node != End {
		ru.triggerNode(ru.r.nodes[node])
	}
}

// triggerNode is trigger for a node already looked up (nil: End).
func (ru *run) triggerNode(n *nodeSpec) {
	if n == nil {
		return
	}
	node := n.name
	s := &ru.sched
	if n.deferred {
		if !slices.Contains(s.deferred, node) {
			s.deferred = append(s.deferred, node)
			slices.Sort(s.deferred)
		}
		return
	}
	i, found := slices.BinarySearch(s.triggered, node)
	if !found {
		s.triggered = slices.Insert(s.triggered, i, node)
	}
}
