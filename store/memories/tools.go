package memories

import (
	"context"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/tools"
)

// Tool names.
const (
	RememberTool = "remember"
	RecallTool   = "recall"
)

type rememberArgs struct {
	Text string `json:"text" jsonschema:"required,description=One fact or lesson worth keeping for later conversations, self-contained, in one to three sentences"`
}

type recallArgs struct {
	Query string `json:"query" jsonschema:"required,description=What you want to remember: words that the memory would contain"`
	Limit int    `json:"limit,omitempty" jsonschema:"description=How many memories at most (default 5, at most 50)"`
}

// Tools returns the remember and recall tools over m, for the owner of
// the run that calls them.
func (m *Memories) Tools() []tools.Tool {
	remember := tools.Typed(RememberTool, "Remember a fact or lesson for later conversations with this user (it outlives this conversation).", nil,
		func(ctx context.Context, a rememberArgs) (string, error) {
			mem, err := m.Remember(ctx, m.OwnerOf(ctx), a.Text, agentOf(ctx))
			if err != nil {
				return "", err
			}
			return "Remembered (" + mem.ID + ").", nil
		})
	recall := tools.Typed(RecallTool, "Recall what earlier conversations with this user learned, by words the memories contain.", nil,
		func(ctx context.Context, a recallArgs) (string, error) {
			found, err := m.Recall(ctx, m.OwnerOf(ctx), a.Query, a.Limit)
			if err != nil {
				return "", err
			}
			if len(found) == 0 {
				return "Nothing remembered matches.", nil
			}
			return Render(found), nil
		})
	return []tools.Tool{remember, recall}
}

// Tool returns the tool called name (RememberTool or RecallTool), or nil.
func (m *Memories) Tool(name string) tools.Tool {
	for _, t := range m.Tools() {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

// Render lists memories for a prompt, one per line, with the day each
// was learned.
func Render(found []Memory) string {
	var b strings.Builder
	for _, mem := range found {
		fmt.Fprintf(&b, "- (%s) %s\n", mem.Created.Format("2006-01-02"), strings.Join(strings.Fields(mem.Text), " "))
	}
	return b.String()
}

// agentOf names the agent calling a tool, from its model-call label, or
// "agent".
func agentOf(ctx context.Context) string {
	if info, ok := graph.TaskOf(ctx); ok && info.Node != "" {
		return info.Node
	}
	return "agent"
}
