package graph

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func cachedOf(thread, id string, bytes int64) *cachedState {
	return &cachedState{thread: thread, rec: CheckpointRecord{ID: id}, bytes: bytes}
}

func TestAStateCacheKeepsWithinItsBounds(t *testing.T) {
	now := time.Unix(0, 0)
	c := NewStateCache(StateCacheConfig{MaxEntries: 3, MaxBytes: 1000, MaxAge: time.Minute})
	c.now = func() time.Time { return now }

	for i := range 5 {
		c.put(cachedOf(fmt.Sprint("t", i), "cp", 10))
	}
	st := c.Stats()
	assert.Equal(t, 3, st.Entries, "entries")
	assert.Equal(t, int64(30), st.Bytes)
	_, ok := c.take(nil, "t1", "cp")
	assert.False(t, ok, "the oldest are dropped")
	_, ok = c.take(nil, "t4", "cp")
	assert.True(t, ok)
	_, ok = c.take(nil, "t4", "cp")
	assert.False(t, ok, "a state is taken once")

	// A thread keeps one state: its newest.
	c.put(cachedOf("t3", "cp2", 10))
	_, ok = c.take(nil, "t3", "cp")
	assert.False(t, ok)
	_, ok = c.take(nil, "t3", "cp2")
	assert.True(t, ok)

	// Bytes: what does not fit pushes the oldest out; a state over a
	// quarter of the bound is not kept, and drops its thread's older one.
	c.put(cachedOf("a", "cp", 240))
	c.put(cachedOf("b", "cp", 240))
	c.put(cachedOf("c", "cp", 240))
	c.put(cachedOf("d", "cp", 240))
	st = c.Stats()
	assert.LessOrEqual(t, st.Bytes, int64(1000))
	assert.Equal(t, 3, st.Entries)
	c.put(cachedOf("d", "cp2", 251))
	_, ok = c.take(nil, "d", "cp")
	assert.False(t, ok)
	_, ok = c.take(nil, "d", "cp2")
	assert.False(t, ok, "over a quarter of MaxBytes")

	// Age: a state not taken within MaxAge is dropped.
	c.put(cachedOf("old", "cp", 1))
	now = now.Add(time.Minute + time.Second)
	c.put(cachedOf("new", "cp", 1))
	_, ok = c.take(nil, "old", "cp")
	assert.False(t, ok, "expired")
	assert.Equal(t, 1, c.Stats().Entries, "only the new one is left")
}
