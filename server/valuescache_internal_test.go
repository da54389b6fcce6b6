package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/coorflow/coorflow/checkpoint/memory"
)

func TestTheValuesCacheForgetsTheOldestBeyondItsBoundAndKeepsNoLargeValues(t *testing.T) {
	values := json.RawMessage(`"` + strings.Repeat("x", 100) + `"`)
	one := (&cachedValues{key: valuesKey{"t", "c00"}, values: values}).size()
	c := newValuesCache(16*one + 128) // room for 16; an entry may take a sixteenth: one+8
	for i := range 18 {
		c.put("t", fmt.Sprintf("c%02d", i), values)
	}
	assert.LessOrEqual(t, c.size, c.max)
	for i := range 18 {
		_, ok := c.get("t", fmt.Sprintf("c%02d", i))
		assert.Equal(t, i >= 2, ok, "entry %d: the two oldest are forgotten", i)
	}

	c.put("t", "big", json.RawMessage(`"`+strings.Repeat("x", 120)+`"`))
	_, ok := c.get("t", "big")
	assert.False(t, ok, "values larger than a sixteenth of the bound are not kept")

	c.put("other", "c09", values)
	c.dropThread("t")
	_, ok = c.get("t", "c09")
	assert.False(t, ok, "a deleted thread's entries are gone")
	_, ok = c.get("other", "c09")
	assert.True(t, ok, "another thread's stay")
	assert.Equal(t, one+int64(len("other")-len("t")), c.size, "the size counts what is left")
}

func TestDeletingAThreadForgetsTheValuesCachedOfIt(t *testing.T) {
	c := newValuesCache(valuesCacheBytes)
	m := newMeteredSaver(memory.New(), c, newStorageMeter(-1, nil, nil, nil))
	c.put(threadKey("alice", "t"), "c1", json.RawMessage(`{"text":"secret"}`))
	assert.NoError(t, m.DeleteThread(t.Context(), threadKey("alice", "t")))
	_, ok := c.get(threadKey("alice", "t"), "c1")
	assert.False(t, ok, "a deleted thread's values are not kept in memory")
}
