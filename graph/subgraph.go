package graph

import (
	"context"
	"fmt"
)

// runNested runs a subgraph as the node of a parent run. The subgraph
// starts from the parent's values of the channels they share; its writes to
// those channels become the node's writes (for a last-value channel, only
// the last one). Its events go to the parent's stream under the node's path.
func (sub *Runnable) runNested(ctx context.Context, parent State) (Command, error) {
	cfg := sub.defaults
	cfg.events = 0
	path := sub.name
	var yield func(Event) bool
	if em := emitterFrom(ctx); em != nil {
		cfg.events = em.r.cfg.events
		path = em.path
		yield = func(ev Event) bool {
			em.r.send(ctx, ev)
			return ctx.Err() == nil
		}
	}
	ru := sub.newRun(cfg, path, yield)

	var writes []Write
	last := make(map[string]int)
	ru.record = func(w Write) {
		name := w.Channel()
		if _, shared := parent.lookupChannel(name); !shared {
			return
		}
		if w.ch.Reducer() == "last" {
			if i, ok := last[name]; ok {
				writes[i] = w
				return
			}
			last[name] = len(writes)
		}
		writes = append(writes, w)
	}

	initial := make([]any, len(sub.layout.channels))
	for i, c := range sub.layout.channels {
		v, ok := parent.lookup(c.Name())
		if !ok {
			continue
		}
		cv, err := c.convert(v)
		if err != nil {
			return Command{}, fmt.Errorf("graph: subgraph %q: %w", sub.name, err)
		}
		initial[i] = cv
	}
	if _, err := ru.executeFrom(ctx, initial, nil); err != nil {
		return Command{}, err
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
