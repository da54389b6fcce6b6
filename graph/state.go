package graph

// State is an immutable view of a graph's channels at one point of a run.
// Every task of a step sees the state as of the step's start; a task started
// by a Send packet also sees the packet's writes, which no other task sees.
// Read it through keys (Key.Get) or, for dynamic channels, Value.
//
// State is cheap to copy and safe to share between goroutines. Values are
// never copied between steps: treat what you read as read-only.
type State struct {
	d       *stateData
	overlay overlay
}

// overlay is a packet's private view of some channels: a few entries,
// searched in order.
type overlay []overlayEntry

type overlayEntry struct {
	name  string
	value any
}

func (o overlay) get(name string) (any, bool) {
	for _, e := range o {
		if e.name == name {
			return e.value, true
		}
	}
	return nil, false
}

// set replaces or adds name's value.
func (o *overlay) set(name string, v any) {
	for i := range *o {
		if (*o)[i].name == name {
			(*o)[i].value = v
			return
		}
	}
	*o = append(*o, overlayEntry{name, v})
}

// stateData is one version of the channel values, indexed by slot.
type stateData struct {
	layout *layout
	vals   []any // nil: nothing written
}

// clone returns a new version of the values, for a step to write. For a
// graph with up to 16 channels, the version and its values are one
// allocation.
func (d *stateData) clone() *stateData {
	n := len(d.vals)
	var c *stateData
	switch {
	case n <= 2:
		b := new(struct {
			d stateData
			v [2]any
		})
		b.d.vals = b.v[:n:n]
		c = &b.d
	case n <= 4:
		b := new(struct {
			d stateData
			v [4]any
		})
		b.d.vals = b.v[:n:n]
		c = &b.d
	case n <= 8:
		b := new(struct {
			d stateData
			v [8]any
		})
		b.d.vals = b.v[:n:n]
		c = &b.d
	case n <= 16:
		b := new(struct {
			d stateData
			v [16]any
		})
		b.d.vals = b.v[:n:n]
		c = &b.d
	default:
		c = &stateData{vals: make([]any, n)}
	}
	c.layout = d.layout
	copy(c.vals, d.vals)
	return c
}

// layout maps channel names to slots for one compiled graph.
type layout struct {
	channels []Channel
	slots    map[string]int
}

func newLayout(chs []Channel) *layout {
	l := &layout{channels: chs, slots: make(map[string]int, len(chs))}
	for i, c := range chs {
		l.slots[c.Name()] = i
	}
	return l
}

// channelOf returns the channel w writes and its slot. A write made with a
// key of the graph's own is found by identity among a few channels, without
// hashing its name; others (a subgraph's key of the same name) by name.
func (l *layout) channelOf(w Write) (Channel, int, bool) {
	if len(l.channels) <= 8 {
		for i, c := range l.channels {
			if c == w.ch {
				return c, i, true
			}
		}
	}
	return l.channel(w.Channel())
}

func (l *layout) channel(name string) (Channel, int, bool) {
	i, ok := l.slots[name]
	if !ok {
		return nil, -1, false
	}
	return l.channels[i], i, true
}

func (s State) lookup(name string) (any, bool) {
	if v, ok := s.overlay.get(name); ok {
		return v, true
	}
	if s.d == nil {
		return nil, false
	}
	i, ok := s.d.layout.slots[name]
	if !ok || s.d.vals[i] == nil {
		return nil, false
	}
	return s.d.vals[i], true
}

// Value returns the value of the channel called name and whether one was
// written. It is the untyped counterpart of Key.Get, for dynamic channels.
func (s State) Value(name string) (any, bool) {
	v, ok := s.lookup(name)
	if !ok {
		return nil, false
	}
	if s.d != nil {
		if c, _, found := s.d.layout.channel(name); found {
			v = c.view(v)
		}
	}
	return v, true
}

// Values returns every channel that holds a value, by name. The map is new;
// the values are shared.
func (s State) Values() map[string]any {
	out := make(map[string]any)
	if s.d != nil {
		for i, c := range s.d.layout.channels {
			if v := s.d.vals[i]; v != nil {
				out[c.Name()] = c.view(v)
			}
		}
	}
	for _, e := range s.overlay {
		out[e.name] = e.value
	}
	return out
}

// Channels returns the names of the channels declared for the graph, in
// declaration order.
func (s State) Channels() []string {
	if s.d == nil {
		return nil
	}
	out := make([]string, len(s.d.layout.channels))
	for i, c := range s.d.layout.channels {
		out[i] = c.Name()
	}
	return out
}
