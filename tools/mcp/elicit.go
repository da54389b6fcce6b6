package mcp

import (
	"context"
	"errors"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coorflow/coorflow/graph"
)

// KindElicitation is the Kind of an Elicitation, the payload of the
// interrupt a server's question becomes.
const KindElicitation = "mcp_elicitation"

// Elicitation is the payload of the interrupt (graph.Interrupt) raised
// when a server asks the user something during a call. The run pauses;
// the answer given on resume goes back to the server when the call is made
// again (the server asks again, and this time the answer is there).
//
// The answer may be:
//   - {"action": "accept", "content": {...}}, {"action": "decline"} or
//     {"action": "cancel"}: the MCP answer itself;
//   - any other object: accepted, as the content;
//   - "decline" or "cancel", or false: declined (or cancelled);
//   - true: accepted, without content (a URL the user visited);
//   - a single value: accepted as the one property the schema asks for;
//   - null: cancelled.
type Elicitation struct {
	Kind   string `json:"kind"`   // KindElicitation
	Server string `json:"server"` // the server's name
	Tool   string `json:"tool"`   // the registry name of the tool called
	// Message is the server's question.
	Message string `json:"message"`
	// Mode is "form" (Schema says what to answer) or "url" (the user
	// visits URL).
	Mode   string `json:"mode,omitempty"`
	Schema any    `json:"schema,omitempty"`
	URL    string `json:"url,omitempty"`
}

// onElicit answers a server's question through the call it belongs to: an
// interrupt of the caller's run. The call is the one whose context the
// question came with (multi round-trip requests), or else the only call
// in flight; with several in flight there is no telling which asked, and
// the question is declined.
func (c *conn) onElicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	cl, _ := ctx.Value(callKey{}).(*call)
	if cl == nil {
		cl = c.soleCall()
	}
	if cl == nil {
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	return cl.elicit(req.Params), nil
}

func (cl *call) elicit(p *sdk.ElicitParams) *sdk.ElicitResult {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.finished || cl.interrupt != nil {
		return &sdk.ElicitResult{Action: "cancel"}
	}
	q := Elicitation{Kind: KindElicitation, Server: cl.c.srv.Name, Tool: cl.tool, Message: p.Message, Mode: p.Mode, Schema: p.RequestedSchema, URL: p.URL}
	if q.Mode == "" {
		q.Mode = "form"
		if q.URL != "" {
			q.Mode = "url"
		}
	}
	answer, err := graph.Interrupt(cl.ctx, q)
	var ie *graph.InterruptError
	switch {
	case errors.As(err, &ie):
		// The run pauses: the call ends now and is made again on resume.
		cl.interrupt = ie
		cl.cancel()
		return &sdk.ElicitResult{Action: "cancel"}
	case err != nil:
		// Outside a running graph node there is nobody to ask.
		return &sdk.ElicitResult{Action: "decline"}
	}
	return elicitAnswer(answer, p.RequestedSchema)
}

// elicitAnswer turns a resume value into the MCP answer (see Elicitation).
func elicitAnswer(v any, schema any) *sdk.ElicitResult {
	switch a := v.(type) {
	case nil:
		return &sdk.ElicitResult{Action: "cancel"}
	case bool:
		if a {
			return &sdk.ElicitResult{Action: "accept"}
		}
		return &sdk.ElicitResult{Action: "decline"}
	case map[string]any:
		if act, ok := a["action"].(string); ok && isAction(act) {
			res := &sdk.ElicitResult{Action: act}
			if content, ok := a["content"].(map[string]any); ok && act == "accept" {
				res.Content = content
			}
			return res
		}
		return &sdk.ElicitResult{Action: "accept", Content: a}
	case string:
		if act := strings.ToLower(strings.TrimSpace(a)); act == "decline" || act == "cancel" {
			return &sdk.ElicitResult{Action: act}
		}
	}
	if prop := onlyProperty(schema); prop != "" {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{prop: v}}
	}
	return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": v}}
}

func isAction(s string) bool { return s == "accept" || s == "decline" || s == "cancel" }

// onlyProperty returns the name of the property a schema asks for when it
// asks for one only, or the only required one.
func onlyProperty(schema any) string {
	m, _ := schema.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	if len(props) == 1 {
		for name := range props {
			return name
		}
	}
	if req, _ := m["required"].([]any); len(req) == 1 {
		name, _ := req[0].(string)
		return name
	}
	return ""
}
