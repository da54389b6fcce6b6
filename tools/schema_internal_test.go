package tools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSchemaIsCompiledOnce(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{"once":{"type":"string"}}}`)
	tl := Func("once", "", raw, func(context.Context, json.RawMessage) (string, error) { return "", nil })
	count := func() int {
		schemas.mu.Lock()
		defer schemas.mu.Unlock()
		return len(schemas.m)
	}
	before := count()
	for range 3 {
		res := Run(t.Context(), tl, json.RawMessage(`{"once":"x"}`), RunOptions{})
		require.Equal(t, StatusOK, res.Status, res.Text())
	}
	assert.Equal(t, before+1, count(), "three calls add one compiled schema")

	first, err := schemas.get(raw)
	require.NoError(t, err)
	second, err := schemas.get(append(json.RawMessage(nil), raw...))
	require.NoError(t, err)
	assert.Same(t, first, second)
}
