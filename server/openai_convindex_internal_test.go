package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTheMemoryIndexHoldsOneConversationAThread: without a Store, a
// thread's new conversation replaces its previous one, a deleted thread
// forgets its conversation, a conversation another thread answered since
// stays that thread's, and beyond maxConvs threads the oldest is
// forgotten.
func TestTheMemoryIndexHoldsOneConversationAThread(t *testing.T) {
	var x convIndex
	for turn := range 5 {
		x.put("a/t1", "t1", fmt.Sprintf("c%d", turn))
	}
	convs, threads := x.len()
	assert.Equal(t, [2]int{1, 1}, [2]int{convs, threads}, "one conversation for five turns")
	_, ok := x.get("c3")
	assert.False(t, ok, "the thread's previous conversation is forgotten")
	id, ok := x.get("c4")
	assert.True(t, ok)
	assert.Equal(t, "t1", id)

	x.put("a/t2", "t2", "c4") // the same conversation, answered by t2
	x.put("a/t1", "t1", "c5")
	id, _ = x.get("c4")
	assert.Equal(t, "t2", id, "t1 moving on leaves t2's conversation")
	x.drop("a/t1")
	_, ok = x.get("c5")
	assert.False(t, ok, "a deleted thread's conversation is forgotten")
	x.drop("a/t2")
	convs, threads = x.len()
	assert.Equal(t, [2]int{0, 0}, [2]int{convs, threads})

	for i := range maxConvs + 2 {
		x.put(fmt.Sprintf("a/t%d", i), fmt.Sprintf("t%d", i), fmt.Sprintf("k%d", i))
	}
	convs, threads = x.len()
	assert.Equal(t, [2]int{maxConvs, maxConvs}, [2]int{convs, threads})
	_, ok = x.get("k1")
	assert.False(t, ok, "the oldest threads are forgotten")
	_, ok = x.get("k2")
	assert.True(t, ok)
}
