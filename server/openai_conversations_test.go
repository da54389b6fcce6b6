package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	storemem "github.com/coorflow/coorflow/store/memory"
)

// The items of the OpenAI endpoint's index of conversations: those of
// the server's own owner, under these prefixes.
const (
	convOwner        = "#coorflow-server"
	convEntries      = "openai/conversations/"
	convThreadHashes = "openai/threads/"
)

// convItems returns the contents of the index's items under prefix, by
// path.
func convItems(t *testing.T, st store.Store, prefix string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for m, err := range store.All(context.Background(), st, convOwner, prefix) {
		require.NoError(t, err)
		it, err := st.Get(context.Background(), convOwner, m.Path)
		require.NoError(t, err)
		out[m.Path] = it.Content
	}
	return out
}

// converse has alice send a conversation of turns messages to model echo
// (the history resent each time, as chat UIs do), the i-th turn to
// envs[i%len(envs)], and returns its threads, one a turn.
func converse(t *testing.T, envs []*env, first string, turns int) []string {
	t.Helper()
	var history []string
	var threads []string
	for i := range turns {
		history = append(history, fmt.Sprintf("%s %d", first, i))
		c, h := envs[i%len(envs)].chat(alice, map[string]any{"model": "echo", "messages": msgs(history...)})
		history = append(history, c.Choices[0].Message.Content)
		threads = append(threads, h.Get(server.OpenAIThreadHeader))
	}
	return threads
}

// TestAConversationHasOneEntryHoweverManyTurns: the index of
// conversations holds one entry for a conversation of many turns, the
// conversation's last, on its thread, and the thread's hash beside it.
func TestAConversationHasOneEntryHoweverManyTurns(t *testing.T) {
	st := storemem.New(store.Config{})
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, Store: st})

	threads := converse(t, []*env{e}, "turn", 6)
	for _, th := range threads {
		require.Equal(t, threads[0], th, "every turn continues the conversation's thread")
	}
	entries := convItems(t, st, convEntries)
	require.Len(t, entries, 1, "one entry for the thread, not one a turn")
	for path, thread := range entries {
		assert.Equal(t, threads[0], thread)
		hashes := convItems(t, st, convThreadHashes)
		require.Len(t, hashes, 1)
		for _, hash := range hashes {
			assert.Equal(t, convEntries+hash, path, "the thread's hash names its entry")
		}
	}
}

// TestDeletingAThreadForgetsItsConversation: a thread deleted through
// either API or pruned leaves no item in the index, and its
// conversation's next turn starts another thread.
func TestDeletingAThreadForgetsItsConversation(t *testing.T) {
	deletes := map[string]func(e *env, thread string){
		"DELETE /v1/threads/{thread}": func(e *env, thread string) {
			e.call("DELETE", "/v1/threads/"+thread, alice, nil, http.StatusNoContent, nil)
		},
		"DELETE /threads/{thread}": func(e *env, thread string) {
			e.call("DELETE", "/threads/"+thread, alice, nil, http.StatusNoContent, nil)
		},
		"POST /threads/prune": func(e *env, thread string) {
			var out map[string]int
			e.call("POST", "/threads/prune", alice, map[string]any{"thread_ids": []string{thread}}, http.StatusOK, &out)
			require.Equal(t, 1, out["pruned_count"])
		},
	}
	for name, del := range deletes {
		t.Run(name, func(t *testing.T) {
			st := storemem.New(store.Config{})
			e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, Store: st})
			first, h := e.chat(alice, map[string]any{"model": "echo", "messages": msgs("one")})
			thread := h.Get(server.OpenAIThreadHeader)
			require.Len(t, convItems(t, st, "openai/"), 2, "the thread's entry and hash")

			del(e, thread)
			assert.Empty(t, convItems(t, st, "openai/"), "the deleted thread's entry and hash are gone")

			_, h = e.chat(alice, map[string]any{"model": "echo", "messages": msgs("one", first.Choices[0].Message.Content, "two")})
			assert.NotEqual(t, thread, h.Get(server.OpenAIThreadHeader), "the conversation goes on on another thread")
		})
	}
}

// deletingStore is a Store that, before the first item of the index of
// conversations is added, calls doomed.
type deletingStore struct {
	store.Store
	once   sync.Once
	doomed func()
}

func (d *deletingStore) Add(ctx context.Context, owner, path, content string, attrs store.Attrs) (store.Meta, error) {
	if owner == convOwner && strings.HasPrefix(path, "openai/") {
		d.once.Do(d.doomed)
	}
	return d.Store.Add(ctx, owner, path, content, attrs)
}

// TestAThreadDeletedWhileItsAnswerIsRememberedLeavesNoEntry: a thread
// deleted after its run ended and before its conversation is in the
// index (its deletion finds nothing to forget) leaves no item there.
func TestAThreadDeletedWhileItsAnswerIsRememberedLeavesNoEntry(t *testing.T) {
	st := &deletingStore{Store: storemem.New(store.Config{})}
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, Store: st})
	st.doomed = func() { e.call("DELETE", "/v1/threads/short-lived", alice, nil, http.StatusNoContent, nil) }

	_, h := e.chat(alice, map[string]any{"model": "echo", "messages": msgs("one")}, server.OpenAIThreadHeader, "short-lived")
	require.Equal(t, "short-lived", h.Get(server.OpenAIThreadHeader))
	e.call("GET", "/v1/threads/short-lived", alice, nil, http.StatusNotFound, nil)
	assert.Empty(t, convItems(t, st, "openai/"), "the deleted thread left no entry")
}

// TestAConversationTakenBackStartsANewThread: a client that resends an
// earlier history with another message (regenerate, edit) starts a new
// thread, rather than continuing the thread that went on past that
// history; the index keeps an entry for each thread.
func TestAConversationTakenBackStartsANewThread(t *testing.T) {
	st := storemem.New(store.Config{})
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, Store: st})
	first, h := e.chat(alice, map[string]any{"model": "echo", "messages": msgs("one")})
	thread := h.Get(server.OpenAIThreadHeader)
	_, h = e.chat(alice, map[string]any{"model": "echo", "messages": msgs("one", first.Choices[0].Message.Content, "two")})
	require.Equal(t, thread, h.Get(server.OpenAIThreadHeader))

	_, h = e.chat(alice, map[string]any{"model": "echo", "messages": msgs("one", first.Choices[0].Message.Content, "two, edited")})
	edited := h.Get(server.OpenAIThreadHeader)
	assert.NotEqual(t, thread, edited, "the thread went on past that history: the edit is on a new thread")
	assert.Len(t, e.runsOn(alice, thread), 2, "the first thread has its own two turns only")
	assert.Len(t, convItems(t, st, convEntries), 2, "one entry a thread")
}

// TestParallelConversationsHaveOneEntryEach: 120 conversations of three
// turns each, sent at once, on one server or spread over three replicas
// sharing a Store (each turn to another replica), each go on on their
// own thread, and leave the index with exactly one entry and one hash
// for each thread, the hash naming the entry, and no other item.
func TestParallelConversationsHaveOneEntryEach(t *testing.T) {
	const n, turns = 120, 3
	for _, b := range admissionBackends {
		if b.name != "memory" && b.name != "postgres_3_replicas" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			st := storemem.New(store.Config{})
			envs := b.start(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, Store: st,
				MaxActiveRuns: 2 * n, MaxQueuedRuns: 2 * n})
			threads := make([]string, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					var history []string
					for j := range turns {
						history = append(history, fmt.Sprintf("conversation %d turn %d", i, j))
						resp := envs[(i+j)%len(envs)].request("POST", chatPath, alice, map[string]any{"model": "echo", "messages": msgs(history...)})
						data, err := io.ReadAll(resp.Body)
						_ = resp.Body.Close()
						if !assert.NoError(t, err) || !assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", data) {
							return
						}
						var c completion
						if !assert.NoError(t, json.Unmarshal(data, &c)) {
							return
						}
						history = append(history, c.Choices[0].Message.Content)
						if j == 0 {
							threads[i] = c.Coorflow.ThreadID
						}
						assert.Equal(t, threads[i], c.Coorflow.ThreadID, "conversation %d turn %d is on its thread", i, j)
					}
				})
			}
			close(start)
			wg.Wait()

			entries := convItems(t, st, convEntries)
			hashes := convItems(t, st, convThreadHashes)
			assert.Equal(t, n, len(entries), "one entry a thread")
			assert.Equal(t, n, len(hashes), "one hash a thread")
			assert.Equal(t, 2*n, len(convItems(t, st, "openai/")), "no other item")
			entryOf, hashOf := map[string]string{}, map[string]string{}
			for path, thread := range entries {
				entryOf[thread] = strings.TrimPrefix(path, convEntries)
			}
			for path, hash := range hashes {
				hashOf[path[strings.LastIndex(path, "/")+1:]] = hash
			}
			for i, th := range threads {
				assert.NotEmpty(t, entryOf[th], "conversation %d's thread %q has an entry", i, th)
				assert.Equal(t, entryOf[th], hashOf[th], "thread %q's hash names its entry", th)
			}
		})
	}
}

// pausingStore is a Store whose first write of an entry of the index of
// conversations waits for release, having said so on paused.
type pausingStore struct {
	store.Store
	first           atomic.Bool
	paused, release chan struct{}
}

func (p *pausingStore) pause(path string) {
	if strings.HasPrefix(path, convEntries) && p.first.CompareAndSwap(false, true) {
		close(p.paused)
		<-p.release
	}
}

func (p *pausingStore) Add(ctx context.Context, owner, path, content string, attrs store.Attrs) (store.Meta, error) {
	p.pause(path)
	return p.Store.Add(ctx, owner, path, content, attrs)
}

func (p *pausingStore) Edit(ctx context.Context, owner, path string, e store.Edit) (store.Meta, error) {
	p.pause(path)
	return p.Store.Edit(ctx, owner, path, e)
}

// TestTwoAnswersOfAThreadRememberedAtOnceLeaveOneEntry: a thread's
// answer whose entry is written after the thread's next answer was
// remembered (another client on the thread: its next run began before
// the first answer's entry was written) leaves the next answer's entry
// only.
func TestTwoAnswersOfAThreadRememberedAtOnceLeaveOneEntry(t *testing.T) {
	st := &pausingStore{Store: storemem.New(store.Config{}), paused: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, Store: st})

	done := make(chan string, 1)
	go func() {
		resp := e.request("POST", chatPath, alice, map[string]any{"model": "echo", "messages": msgs("first")}, server.OpenAIThreadHeader, "shared")
		data, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		done <- string(data)
	}()
	<-st.paused
	second, _ := e.chat(alice, map[string]any{"model": "echo", "messages": msgs("second")}, server.OpenAIThreadHeader, "shared")
	close(st.release)
	assert.Contains(t, <-done, "FIRST")

	entries := convItems(t, st, convEntries)
	assert.Equal(t, 1, len(entries), "one entry for the thread: %v", entries)
	hashes := convItems(t, st, convThreadHashes)
	require.Len(t, hashes, 1)
	for _, hash := range hashes {
		assert.Equal(t, "shared", entries[convEntries+hash], "the thread's hash names its entry")
	}
	_, h := e.chat(alice, map[string]any{"model": "echo", "messages": msgs("second", second.Choices[0].Message.Content, "third")})
	assert.Equal(t, "shared", h.Get(server.OpenAIThreadHeader), "the last answer's conversation goes on on the thread")
}

// TestTwoThreadsOfOneConversationShareItsEntry: two threads that gave the
// same conversation the same answer (the same first message sent twice)
// share its entry, which names the last; the other deleted, or moving on,
// leaves it; the last deleted takes it.
func TestTwoThreadsOfOneConversationShareItsEntry(t *testing.T) {
	st := storemem.New(store.Config{})
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, Store: st})
	first, h := e.chat(alice, map[string]any{"model": "echo", "messages": msgs("same")})
	older := h.Get(server.OpenAIThreadHeader)
	_, h = e.chat(alice, map[string]any{"model": "echo", "messages": msgs("same")})
	last := h.Get(server.OpenAIThreadHeader)
	require.NotEqual(t, older, last, "a first message starts a thread")
	entries := convItems(t, st, convEntries)
	require.Equal(t, 1, len(entries))
	assert.Len(t, convItems(t, st, convThreadHashes), 2)

	e.chat(alice, map[string]any{"model": "echo", "messages": msgs("other")}, server.OpenAIThreadHeader, older)
	e.call("DELETE", "/v1/threads/"+older, alice, nil, http.StatusNoContent, nil)
	assert.Equal(t, entries, convItems(t, st, convEntries), "the older thread's changes leave the entry of the last")
	_, h = e.chat(alice, map[string]any{"model": "echo", "messages": msgs("same", first.Choices[0].Message.Content, "more")})
	assert.Equal(t, last, h.Get(server.OpenAIThreadHeader), "the conversation goes on on the last thread")

	e.call("DELETE", "/v1/threads/"+last, alice, nil, http.StatusNoContent, nil)
	assert.Empty(t, convItems(t, st, "openai/"))
}
