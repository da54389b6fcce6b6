package server

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedConn reads the messages it was given and keeps what is written.
type scriptedConn struct {
	mcp.Connection
	in      []jsonrpc.Message
	written []jsonrpc.Message
}

func (c *scriptedConn) Read(context.Context) (jsonrpc.Message, error) {
	msg := c.in[0]
	c.in = c.in[1:]
	return msg, nil
}

func (c *scriptedConn) Write(_ context.Context, msg jsonrpc.Message) error {
	c.written = append(c.written, msg)
	return nil
}

func TestQuietConnWithholdsTheResponseToACancelledCall(t *testing.T) {
	id := func(v any) jsonrpc.ID {
		i, err := jsonrpc.MakeID(v)
		require.NoError(t, err)
		return i
	}
	msgs := []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block"}}`,
		`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"block"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`,
	}
	inner := &scriptedConn{}
	for _, m := range msgs {
		msg, err := jsonrpc.DecodeMessage([]byte(m))
		require.NoError(t, err)
		inner.in = append(inner.in, msg)
	}
	c := &quietConn{Connection: inner, calls: map[string]bool{}}
	for range msgs {
		_, err := c.Read(t.Context())
		require.NoError(t, err)
	}
	require.NoError(t, c.Write(t.Context(), &jsonrpc.Response{ID: id(float64(7)), Error: context.Canceled}))
	require.NoError(t, c.Write(t.Context(), &jsonrpc.Response{ID: id("b"), Result: []byte(`{}`)}))
	require.NoError(t, c.Write(t.Context(), &jsonrpc.Response{ID: id(float64(99)), Result: []byte(`{}`)}))
	require.Len(t, inner.written, 2, "the cancelled call's response is withheld")
	assert.Equal(t, id("b"), inner.written[0].(*jsonrpc.Response).ID)
	assert.Equal(t, id(float64(99)), inner.written[1].(*jsonrpc.Response).ID, "a cancel of a call not in flight withholds nothing")
	assert.Empty(t, c.calls, "answered calls are forgotten")
}

func TestMCPCallsInFlightAreBoundedByOwner(t *testing.T) {
	const max, tries = 64, 200
	var c mcpCalls
	start, results := make(chan struct{}), make(chan func(bool), tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, forget, err := c.begin("alice", ownerScope("alice"), []string{fmt.Sprint(i)}, func() {}, max)
			if err != nil {
				results <- nil
				return
			}
			results <- forget
		}()
	}
	close(start)
	wg.Wait()
	close(results)
	var held []func(bool)
	for forget := range results {
		if forget != nil {
			held = append(held, forget)
		}
	}
	assert.Len(t, held, max, "of %d parallel calls, the owner's first %d are in flight", tries, max)

	_, _, err := c.begin("alice", ownerScope("alice"), []string{"one-more"}, nil, max)
	require.NotNil(t, err)
	assert.Equal(t, 429, err.Status)
	assert.Equal(t, QuotaMCPRequests, err.Quota)
	assert.Equal(t, `owner "alice" has 64 MCP requests in flight, the most allowed: wait for one to end, then try again`, err.Message)
	_, forgetBob, err := c.begin("bob", ownerScope("bob"), []string{"1"}, nil, max)
	require.Nil(t, err, "another owner's calls are counted apart")
	forgetBob(false)

	for _, forget := range held {
		forget(false)
	}
	assert.Empty(t, c.m, "ended calls are forgotten")
	assert.Empty(t, c.owners)
}

func TestMCPCancelEndsOnlyTheOneCallItNames(t *testing.T) {
	var c mcpCalls
	ended := map[string]int{}
	end := func(name string) func() { return func() { ended[name]++ } }
	mine, forget, err := c.begin("alice", ownerScope("alice"), []string{"7"}, end("alice 7"), 8)
	require.Nil(t, err)
	defer forget(false)
	_, forget2, err := c.begin("bob", ownerScope("bob"), []string{"7"}, end("bob 7"), 8)
	require.Nil(t, err)
	defer forget2(false)
	twice := []*mcpInFlight{}
	for range 2 {
		calls, forget, err := c.begin("alice", ownerScope("alice"), []string{"1"}, end("alice 1"), 8)
		require.Nil(t, err)
		defer forget(false)
		twice = append(twice, calls["1"])
	}

	c.cancel(mcpCallKey{ownerScope("alice"), "7"})
	c.cancel(mcpCallKey{ownerScope("alice"), "1"}) // two of Alice's calls have id 1
	c.cancel(mcpCallKey{ownerScope("carol"), "7"})
	assert.Equal(t, map[string]int{"alice 7": 1}, ended)
	assert.True(t, mine["7"].cancelled.Load())
	assert.False(t, twice[0].cancelled.Load())
	assert.False(t, twice[1].cancelled.Load())
}

func TestMCPCancelAfterItsCallWasDroppedCancelsNoOther(t *testing.T) {
	var c mcpCalls
	ended := 0
	scope := ownerScope("alice")
	// A client closes the stream of its call 3, then sends its cancel; by
	// then another client of Alice's makes its own call 3.
	_, dropA, err := c.begin("alice", scope, []string{"3"}, func() {}, 8)
	require.Nil(t, err)
	dropA(true)
	b, forgetB, err := c.begin("alice", scope, []string{"3"}, func() { ended++ }, 8)
	require.Nil(t, err)
	defer forgetB(false)
	c.cancel(mcpCallKey{scope, "3"})
	assert.Zero(t, ended, "the cancel is the dropped call's")
	assert.False(t, b["3"].cancelled.Load())
	c.cancel(mcpCallKey{scope, "3"})
	assert.Equal(t, 1, ended, "a second cancel names the call in flight")

	for i := range 2 * maxMCPDropped {
		_, drop, err := c.begin("alice", scope, []string{fmt.Sprint("d", i)}, func() {}, 8)
		require.Nil(t, err)
		drop(true)
	}
	assert.Len(t, c.dropped[scope], maxMCPDropped, "the dropped ids kept are bounded")
}
