package llm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithBreakpoints(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"string content becomes a marked block",
			`{"messages":[{"role":"user","content":"hi"}]}`,
			`{"messages":[{"role":"user","content":[{"cache_control":{"type":"ephemeral"},"text":"hi","type":"text"}]}]}`},
		{"thinking and empty text are passed over",
			`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"t"},{"type":"text","text":" "}]}]}`,
			`{"messages":[{"role":"user","content":[{"cache_control":{"type":"ephemeral"},"text":"q","type":"text"}]},{"role":"assistant","content":[{"cache_control":{"type":"ephemeral"},"text":"a","type":"text"},{"thinking":"t","type":"thinking"},{"text":" ","type":"text"}]}]}`},
		{"no system, no tools, no messages",
			`{"model":"m"}`, `{"model":"m"}`},
		{"the caller's breakpoints are kept and counted",
			`{"system":"s","tools":[{"name":"a"}],"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"y"}]}`,
			`{"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"y"}],"system":[{"cache_control":{"type":"ephemeral"},"text":"s","type":"text"}],"tools":[{"cache_control":{"type":"ephemeral"},"name":"a"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ok := withBreakpoints([]byte(tt.in))
			require.True(t, ok)
			assert.JSONEq(t, tt.want, string(out))
		})
	}
	_, ok := withBreakpoints([]byte(`not json`))
	assert.False(t, ok, "a body it cannot read is sent as it is")
	_, ok = withBreakpoints([]byte(`{"messages":"odd"}`))
	assert.False(t, ok)
}
