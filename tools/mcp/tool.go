package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/tools"
)

// maxDescriptionBytes caps a tool's description as the model reads it.
const maxDescriptionBytes = 4 << 10

// Tool is a tool of an MCP server, as a tools.Tool. Its name is the
// server's name, '_', and the tool's name on the server, with characters
// that model providers refuse replaced by '_' (and a hash suffix when that
// is too long or collides).
type Tool struct {
	c      *conn
	name   string
	remote string
	desc   string
	schema json.RawMessage
	hints  *sdk.ToolAnnotations
}

var _ tools.TimeoutTool = (*Tool)(nil)

// Name is the name the model calls the tool by.
func (t *Tool) Name() string { return t.name }

// Description is the server's title and description of the tool.
func (t *Tool) Description() string { return t.desc }

// Schema is the tool's input schema as the server gives it.
func (t *Tool) Schema() json.RawMessage { return t.schema }

// Timeout is the Server's call timeout.
func (t *Tool) Timeout() time.Duration { return t.c.srv.Timeout }

// Server is the name of the tool's server; Remote the tool's name there.
func (t *Tool) Server() string { return t.c.srv.Name }

// Remote is the tool's name on its server.
func (t *Tool) Remote() string { return t.remote }

// ReadOnly reports whether the server says the tool changes nothing.
func (t *Tool) ReadOnly() bool { return t.hints != nil && t.hints.ReadOnlyHint }

// Call calls the tool on its server, connecting first if needed. Inside a
// running graph node the call is journaled (graph.Do): when the node runs
// again, after an interrupt or a crash, the recorded result is returned and
// the server is not called again. A result the server marks as an error is
// returned as a *CallError carrying its text; a question the server asks
// during the call pauses the run (see Elicitation).
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	rec, err := graph.Do(ctx, "mcp:"+t.name, func(ctx context.Context) (record, error) {
		res, err := t.c.callTool(ctx, t.name, t.remote, args)
		if err != nil {
			return record{}, err
		}
		return render(res, t.c.srv.MaxResultBytes, t.c.srv.MaxInlineBytes), nil
	})
	if err != nil {
		return "", err
	}
	if rec.IsError {
		return "", &CallError{Server: t.c.srv.Name, Tool: t.remote, Text: rec.Text}
	}
	return rec.Text, nil
}

// newTools makes the tools of a server's list, named without collisions.
func newTools(c *conn, listed []*sdk.Tool) []*Tool {
	sorted := slices.Clone(listed)
	slices.SortFunc(sorted, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	taken := map[string]bool{}
	out := make([]*Tool, 0, len(sorted))
	for _, st := range sorted {
		name := toolName(c.srv.Name, st.Name, taken)
		taken[name] = true
		out = append(out, &Tool{c: c, name: name, remote: st.Name, desc: description(st), schema: inputSchema(st.InputSchema), hints: st.Annotations})
	}
	return out
}

// toolName is server_tool with only [a-zA-Z0-9_-], at most 64 bytes; a
// hash of the original name tells apart names that would collide.
func toolName(server, remote string, taken map[string]bool) string {
	var b strings.Builder
	b.WriteString(server + "_")
	for _, r := range remote {
		if r < 128 && (r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) <= 64 && !taken[name] {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + remote))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:min(len(name), 64-len(suffix))] + suffix
}

func description(t *sdk.Tool) string {
	d := strings.TrimSpace(t.Description)
	if t.Title != "" && !strings.HasPrefix(d, t.Title) {
		d = strings.TrimSpace(t.Title + ". " + d)
	}
	return capText(d, maxDescriptionBytes)
}

// inputSchema is the tool's input schema as JSON, without "$schema" (some
// providers refuse it), and an object schema when the server sent none.
func inputSchema(v any) json.RawMessage {
	m, ok := v.(map[string]any)
	if !ok {
		if raw, err := json.Marshal(v); err == nil {
			_ = json.Unmarshal(raw, &m)
		}
	}
	m = maps.Clone(m) // the session keeps the listed tool
	if m == nil {
		m = map[string]any{}
	}
	delete(m, "$schema")
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return raw
}
