package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coorflow/coorflow/graph"
)

// KindProgress is the Kind of a Progress.
const KindProgress = "mcp_progress"

// Progress is the Data of the custom event (graph.Emit) a server's
// progress notification becomes, under the path of the tool call.
type Progress struct {
	Kind   string `json:"kind"`   // KindProgress
	Server string `json:"server"` // the server's name
	Tool   string `json:"tool"`   // the registry name of the tool called
	// Progress grows with each notification; Total, when the server knows
	// it, is where it ends.
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// onProgress publishes a progress notification as an event of the call it
// belongs to. Notifications for calls that have ended are dropped.
func (c *conn) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	token, _ := req.Params.ProgressToken.(string)
	defer c.handled(token)
	cl := c.byToken(token)
	if cl == nil {
		return
	}
	cl.mu.Lock()
	defer cl.mu.Unlock() // finish waits for the event to be sent
	if cl.finished {
		return
	}
	graph.Emit(cl.ctx, Progress{
		Kind: KindProgress, Server: c.srv.Name, Tool: cl.tool,
		Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message,
	})
}
