package server

import (
	"container/list"
	"encoding/json"
	"sync"
)

// valuesCacheBytes bounds the values the server keeps of runs that ended
// recently (valuesCache): small next to Config.RetainBytes, so that the
// memory of finished runs stays what RetainBytes says give or take this.
const valuesCacheBytes = 1 << 20

// valuesEntryOverhead is what an entry takes besides its values: the
// struct, its keys, its list element and map entry.
const valuesEntryOverhead = 256

// valuesCache holds the encoded values of the checkpoints at which runs
// of this server ended done, so that the clients waiting for a run, or
// polling it, get its values without reading them back from the Saver
// (withValues). A checkpoint's values never change, so an entry stays
// right until its thread is deleted, when it is dropped (see
// meteredSaver.DeleteThread). It holds at most valuesCacheBytes, the
// oldest entries forgotten first; values larger than a sixteenth of that
// (64 KiB) are not kept.
type valuesCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	m     map[valuesKey]*list.Element // of *cachedValues
	order list.List                   // oldest first
}

// valuesKey names a checkpoint: the Saver's thread key and its id.
type valuesKey struct{ thread, checkpoint string }

type cachedValues struct {
	key    valuesKey
	values json.RawMessage
}

func newValuesCache(max int64) *valuesCache {
	return &valuesCache{max: max, m: make(map[valuesKey]*list.Element)}
}

func (e *cachedValues) size() int64 {
	return int64(valuesEntryOverhead + len(e.key.thread) + len(e.key.checkpoint) + len(e.values))
}

// get returns the values kept for checkpoint cp of thread, or false.
func (c *valuesCache) get(thread, cp string) (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[valuesKey{thread, cp}]
	if !ok {
		return nil, false
	}
	return el.Value.(*cachedValues).values, true
}

// put keeps values, the encoded values of checkpoint cp of thread, unless
// they are too large, forgetting the oldest entries beyond the bound.
func (c *valuesCache) put(thread, cp string, values json.RawMessage) {
	e := &cachedValues{key: valuesKey{thread, cp}, values: values}
	if e.size() > c.max/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[e.key]; ok {
		return
	}
	c.m[e.key] = c.order.PushBack(e)
	c.size += e.size()
	for c.size > c.max {
		c.removeLocked(c.order.Front())
	}
}

// dropThread forgets every entry of thread.
func (c *valuesCache) dropThread(thread string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.Front(); el != nil; {
		next := el.Next()
		if el.Value.(*cachedValues).key.thread == thread {
			c.removeLocked(el)
		}
		el = next
	}
}

func (c *valuesCache) removeLocked(el *list.Element) {
	e := el.Value.(*cachedValues)
	delete(c.m, e.key)
	c.order.Remove(el)
	c.size -= e.size()
}
