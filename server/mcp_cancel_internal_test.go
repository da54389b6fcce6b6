package server

import (
	"context"
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
