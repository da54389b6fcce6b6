package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// runNested runs a subgraph as the node of a parent run. The subgraph
// starts from the parent's values of the channels they share; its writes to
// those channels become the node's writes (for a last-value channel, only
// the last one). Its events go to the parent's stream under the node's
// path. When the parent is durable, the subgraph checkpoints in its own
// namespace of the parent's thread (one per run of the node), so an
// interrupt inside it pauses the parent and a resume continues it.
func (sub *Runnable) runNested(ctx context.Context, parent State) (Command, error) {
	cfg := sub.defaults
	cfg.events, cfg.saver, cfg.thread, cfg.resume, cfg.checkpointID = eventFilter{}, nil, "", nil, ""
	path := sub.name
	var yield func(Event, error) bool
	var answers map[string]json.RawMessage
	if em := emitterFrom(ctx); em != nil {
		cfg.events = em.r.cfg.events
		cfg.runtime = em.r.cfg.runtime
		cfg.taskExec = em.r.cfg.taskExec
		path = em.path
		yield = func(ev Event, _ error) bool {
			em.r.send(ctx, ev)
			if ev.Kind == EventNodeStart {
				// The node is not called if the consumer broke out at its
				// start: wait until the parent's loop has delivered it.
				em.r.send(ctx, Event{Kind: delivered})
			}
			return ctx.Err() == nil
		}
		if p := em.r.p; p != nil && em.t != nil {
			cfg.saver, cfg.thread, cfg.durability = p.saver, p.thread, em.r.cfg.durability
			cfg.ns = subgraphNS(p.ns, em.t.label, p.cp.ID)
			answers = em.t.resume
		}
	}
	ru, err := sub.newRun(cfg, path, yield)
	if err != nil {
		return Command{}, err
	}
	ru.answers = answers

	ru.shared = make(map[string]bool)
	initial := make([]any, len(sub.layout.channels))
	for i, c := range sub.layout.channels {
		if _, ok := parent.lookupChannel(c.Name()); !ok {
			continue
		}
		ru.shared[c.Name()] = true
		v, ok := parent.lookup(c.Name())
		if !ok {
			continue
		}
		cv, err := c.convert(v)
		if err != nil {
			return Command{}, fmt.Errorf("graph: subgraph %q: %w", sub.name, err)
		}
		initial[i] = c.view(cv) // the parent's value is shared with its other tasks
	}

	var writes []Write
	last := make(map[string]int)
	ru.record = func(w Write) {
		name := w.Channel()
		if w.ch.Reducer() == "last" {
			if i, ok := last[name]; ok {
				writes[i] = w
				return
			}
			last[name] = len(writes)
		}
		writes = append(writes, w)
	}

	res, err := ru.execute(ctx, initial, nil)
	if err != nil {
		return Command{}, err
	}
	if res.Status == StatusInterrupted {
		return Command{}, &InterruptError{Interrupts: res.Interrupts}
	}
	return Update(writes...), nil
}

// lookupChannel reports whether the graph of s declares a channel called
// name.
func (s State) lookupChannel(name string) (Channel, bool) {
	if s.d == nil {
		return nil, false
	}
	c, _, ok := s.d.layout.channel(name)
	return c, ok
}

// subgraphNS is the checkpoint namespace of the run of a subgraph node by
// the task label, in the step after checkpoint cp of namespace parent: one
// per run of the node, the same when that step is resumed or restarted. A
// replay follows a new checkpoint (see fork), so it gets a new namespace.
func subgraphNS(parent, label, cp string) string {
	ns := label + "@" + cp
	if parent != "" {
		ns = parent + "/" + ns
	}
	return ns
}

// subgraphAt returns the compiled subgraph whose runs checkpoint in ns (a
// namespace subgraphNS made, nested or not).
func (r *Runnable) subgraphAt(ns string) (*Runnable, error) {
	cur := r
	for seg := range strings.SplitSeq(ns, "/") {
		at := strings.LastIndexByte(seg, '@')
		if at <= 0 || at == len(seg)-1 {
			return nil, fmt.Errorf("graph: %q is not a subgraph namespace: take one from StepTask.Subgraph", ns)
		}
		name, _, _ := strings.Cut(seg[:at], "[")
		n := cur.nodes[name]
		switch {
		case n == nil:
			return nil, fmt.Errorf("graph: subgraph namespace %q: graph %q has no node %q: %w", ns, cur.name, name, ErrUnknownNode)
		case n.sub == nil:
			return nil, fmt.Errorf("graph: subgraph namespace %q: node %q of graph %q is not a subgraph", ns, name, cur.name)
		}
		cur = n.sub
	}
	return cur, nil
}
