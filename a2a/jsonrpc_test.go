package a2a_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/a2a"
)

func TestDecodeRequestRefusesWhatIsNotAValidRequest(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		code       int
	}{
		{"not JSON", `{"jsonrpc":`, a2a.CodeParseError},
		{"an array", `[1,2]`, a2a.CodeParseError},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"GetTask"}`, a2a.CodeInvalidRequest},
		{"no method", `{"jsonrpc":"2.0","id":1}`, a2a.CodeInvalidRequest},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"GetTask"}`, a2a.CodeInvalidRequest},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"GetTask"}`, a2a.CodeInvalidRequest},
		{"too large", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"` + strings.Repeat("x", 200) + `"}}`, a2a.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, e := a2a.DecodeRequest(strings.NewReader(tc.body), 128)
			require.NotNil(t, e)
			assert.Equal(t, tc.code, e.Code, e.Message)
		})
	}
	req, e := a2a.DecodeRequest(strings.NewReader(`{"jsonrpc":"2.0","id":"a","method":"GetTask","params":{"id":"t"}}`), 128)
	require.Nil(t, e)
	assert.Equal(t, "GetTask", req.Method)
	var p a2a.TaskRequest
	require.Nil(t, a2a.DecodeParams(req.Params, &p))
	assert.Equal(t, "t", p.ID)
	assert.NotNil(t, a2a.DecodeParams([]byte(`[1]`), &p), "params must be an object")
}
