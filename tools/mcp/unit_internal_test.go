package mcp

import (
	"bytes"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolNames(t *testing.T) {
	taken := map[string]bool{}
	assert.Equal(t, "everything_get-sum", toolName("everything", "get-sum", taken))
	assert.Equal(t, "fs_read_file", toolName("fs", "read.file", taken))
	assert.Equal(t, "fs_caf_", toolName("fs", "café", taken), "a non-ASCII rune becomes _")
	taken["fs_read_file"] = true
	collided := toolName("fs", "read_file", taken)
	assert.Regexp(t, `^fs_read_file_[0-9a-f]{8}$`, collided, "a collision gets a hash suffix")
	long := toolName("server", strings.Repeat("x", 100), map[string]bool{})
	assert.Len(t, long, 64)
	assert.Regexp(t, `^server_x+_[0-9a-f]{8}$`, long)
	assert.NotEqual(t, long, toolName("server", strings.Repeat("x", 101), map[string]bool{}), "long names stay apart")
}

func TestNewToolsAreNamedInSortedOrder(t *testing.T) {
	c := &conn{srv: Server{Name: "s"}}
	// Whatever order the server lists them in, the same tool gets the
	// plain name.
	for _, order := range [][]string{{"a.b", "a_b"}, {"a_b", "a.b"}} {
		var listed []*sdk.Tool
		for _, n := range order {
			listed = append(listed, &sdk.Tool{Name: n, InputSchema: map[string]any{"type": "object"}})
		}
		got := newTools(c, listed)
		require.Len(t, got, 2)
		assert.Equal(t, "a.b", got[0].remote)
		assert.Equal(t, "s_a_b", got[0].name)
		assert.Regexp(t, `^s_a_b_[0-9a-f]{8}$`, got[1].name)
	}
}

func TestInputSchema(t *testing.T) {
	listed := map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	assert.JSONEq(t, `{"type":"object","properties":{"q":{"type":"string"}}}`, string(inputSchema(listed)))
	assert.Contains(t, listed, "$schema", "the listed tool is left as it was")
	assert.JSONEq(t, `{"type":"object"}`, string(inputSchema(nil)))
}

func TestElicitAnswers(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
	cases := []struct {
		name   string
		answer any
		want   sdk.ElicitResult
	}{
		{"an MCP answer", map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}},
		{"a decline", map[string]any{"action": "decline"}, sdk.ElicitResult{Action: "decline"}},
		{"an object is the content", map[string]any{"name": "Ada"}, sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}},
		{"decline as text", "Decline", sdk.ElicitResult{Action: "decline"}},
		{"cancel as text", "cancel", sdk.ElicitResult{Action: "cancel"}},
		{"false", false, sdk.ElicitResult{Action: "decline"}},
		{"true", true, sdk.ElicitResult{Action: "accept"}},
		{"null", nil, sdk.ElicitResult{Action: "cancel"}},
		{"a value for the only property", "Ada", sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, &c.want, elicitAnswer(c.answer, schema))
		})
	}
	assert.Equal(t, &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": 42.0}}, elicitAnswer(42.0, nil))
}

func TestRender(t *testing.T) {
	size := int64(2048)
	res := &sdk.CallToolResult{
		Content: []sdk.Content{
			&sdk.TextContent{Text: "first"},
			&sdk.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: bytes.Repeat([]byte{0}, 100)},
			&sdk.ResourceLink{URI: "file:///a.txt", Name: "a file", MIMEType: "text/plain", Size: &size, Description: "The file."},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://x", MIMEType: "text/markdown", Text: "# X"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://b", Blob: []byte("hi")}},
			&sdk.TextContent{Text: `{"n": 1}`},
		},
		StructuredContent: map[string]any{"n": 1},
	}
	got := render(res, 10000, 10)
	want := strings.Join([]string{
		"first",
		"[image image/png, 3 bytes] data:image/png;base64,AQID",
		"[audio audio/wav, 100 bytes: larger than 10 bytes, not included]",
		`[resource link: file:///a.txt name="a file" type=text/plain size=2048] The file.`,
		"[resource mem://x (text/markdown)]\n# X",
		"[resource mem://b] [blob application/octet-stream, 2 bytes] data:application/octet-stream;base64,aGk=",
		`{"n": 1}`,
	}, "\n")
	assert.Equal(t, record{Text: want}, got, "the structured content is a text part already")

	res = &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}, StructuredContent: map[string]any{"n": 2}, IsError: true}
	assert.Equal(t, record{Text: "done\nStructured result: {\"n\":2}", IsError: true}, render(res, 100, 10))
}

func TestCapTextKeepsRunesWhole(t *testing.T) {
	assert.Equal(t, "short", capText("short", 10))
	assert.Equal(t, "é\n[… the result was cut: 2 of 6 bytes shown]", capText("ééé", 3))
}

func TestServerChecks(t *testing.T) {
	cases := []struct {
		srv  Server
		want string
	}{
		{Server{Name: "bad name", Command: "x"}, `mcp: invalid server: name "bad name": use 1 to 32 letters, digits, _ or -, starting with a letter or digit`},
		{Server{Name: "s"}, `mcp: invalid server "s": give a command (a stdio server) or a url (a streamable HTTP server)`},
		{Server{Name: "s", Command: "x", URL: "http://h/mcp"}, `mcp: invalid server "s": give a command or a url, not both`},
		{Server{Name: "s", URL: "ftp://h/mcp"}, `mcp: invalid server "s": url "ftp://h/mcp" is not an http or https URL`},
		{Server{Name: "s", URL: "http://h/mcp", Args: []string{"a"}}, `mcp: invalid server "s": args, env, inherit_env and dir are for stdio servers (command), not for a url`},
		{Server{Name: "s", URL: "http://h/mcp", Bearer: "t", Headers: map[string]string{"authorization": "x"}}, `mcp: invalid server "s": give the Authorization header or a bearer token, not both`},
		{Server{Name: "s", Command: "x", Bearer: "t"}, `mcp: invalid server "s": headers and bearer tokens are for HTTP servers (url), not for a command`},
		{Server{Name: "s", Command: "x", InheritEnv: []string{"A-B"}}, `mcp: invalid server "s": environment variable name "A-B" is not valid`},
	}
	for _, c := range cases {
		err := c.srv.Check()
		require.ErrorIs(t, err, ErrInvalidServer)
		assert.Equal(t, c.want, err.Error())
	}
	_, err := NewToolset(Config{Servers: []Server{{Name: "a", Command: "x"}, {Name: "a", Command: "y"}}})
	assert.EqualError(t, err, `mcp: invalid server "a": two servers have this name`)
}

func TestServerEnv(t *testing.T) {
	parent := map[string]string{"PATH": "/bin", "HOME": "/h", "SECRET": "s", "KEEP": "k"}
	env := serverEnv(&Server{Env: map[string]string{"OWN": "o", "PATH": "/custom"}, InheritEnv: []string{"KEEP", "UNSET"}}, func(k string) string { return parent[k] })
	assert.Equal(t, []string{"HOME=/h", "KEEP=k", "OWN=o", "PATH=/custom"}, env)
}

func TestProgressTapCountsNotifications(t *testing.T) {
	var got []string
	tap := &progressTap{note: func(tok string) { got = append(got, tok) }}
	msgs := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"coorflow-1","progress":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"notifications/progress"}]}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"coorflow-2"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"coorflow-1","progress":2}}` + "\n"
	// Fed in pieces that split lines anywhere.
	for i := 0; i < len(msgs); i += 7 {
		tap.scan([]byte(msgs[i:min(i+7, len(msgs))]))
	}
	assert.Equal(t, []string{"coorflow-1", "coorflow-1"}, got, "only well-formed notifications with a token of ours")

	got = nil
	sse := &progressTap{sse: true, note: func(tok string) { got = append(got, tok) }}
	sse.scan([]byte("event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"coorflow-9\",\"progress\":3}}\n\n"))
	assert.Equal(t, []string{"coorflow-9"}, got)
}
