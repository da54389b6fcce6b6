package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSchemaIsCompiledOnce(t *testing.T) {
	// A schema no other test (or earlier run of this one) has compiled.
	raw := json.RawMessage(fmt.Sprintf(`{"type":"object","description":"%d","properties":{"once":{"type":"string"}}}`, time.Now().UnixNano()))
	cached := func() (compiled, bool) {
		schemas.mu.Lock()
		defer schemas.mu.Unlock()
		c, ok := schemas.m[string(raw)]
		return c, ok
	}
	_, ok := cached()
	require.False(t, ok)

	tl := Func("once", "", raw, func(context.Context, json.RawMessage) (string, error) { return "", nil })
	res := Run(t.Context(), tl, json.RawMessage(`{"once":"x"}`), RunOptions{})
	require.Equal(t, StatusOK, res.Status, res.Text())
	first, ok := cached()
	require.True(t, ok, "the first call compiles and caches the schema")

	for range 2 {
		res := Run(t.Context(), tl, json.RawMessage(`{"once":"x"}`), RunOptions{})
		require.Equal(t, StatusOK, res.Status, res.Text())
	}
	again, err := schemas.get(append(json.RawMessage(nil), raw...))
	require.NoError(t, err)
	assert.Same(t, first.schema, again, "later calls reuse the compiled schema")
}
