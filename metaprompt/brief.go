package metaprompt

import (
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// instructions is the meta-prompt: the system message of every request.
//
//go:embed metaprompt.md
var instructions string

// Instructions returns the meta-prompt: the instructions, sent as the
// system message, that tell a model how to expand a Brief.
func Instructions() string { return instructions }

// Brief describes the agent whose system prompt is to be written: what the
// planner and the factory know about it.
type Brief struct {
	// Name is the agent's name; it is required and labels the model calls
	// ("metaprompt:<name>") and the journal entry of the expansion.
	Name string `json:"name"`
	// Role says what the agent is, in a few words ("market analyst").
	Role string `json:"role,omitempty"`
	// Capabilities says what the agent can do.
	Capabilities string `json:"capabilities,omitempty"`
	// Contribution is what the team expects the agent to hand over.
	Contribution string `json:"contribution,omitempty"`
	// Tools are the tools the agent will have; none means it has none.
	Tools []Tool `json:"tools,omitempty"`
	// Locale is the language the agent works and answers in ("en-US",
	// "zh-CN"); empty means English.
	Locale string `json:"locale,omitempty"`
	// Task is the short task description to expand.
	Task string `json:"task,omitempty"`
	// Pinned, when not blank, is a system prompt written by the user: Expand
	// returns it as it is, without calling the model, without checking it
	// and without caching it.
	Pinned string `json:"pinned,omitempty"`
}

// Tool is a tool an agent will have, as the brief presents it.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// normalized returns b with its text fields trimmed and its tools sorted
// by name, so that briefs that differ only in spacing or tool order render
// the same request and share a cache entry. Pinned is kept as it is.
func (b Brief) normalized() Brief {
	b.Name = strings.TrimSpace(b.Name)
	b.Role = strings.TrimSpace(b.Role)
	b.Capabilities = strings.TrimSpace(b.Capabilities)
	b.Contribution = strings.TrimSpace(b.Contribution)
	b.Locale = strings.TrimSpace(b.Locale)
	b.Task = strings.TrimSpace(b.Task)
	tools := make([]Tool, 0, len(b.Tools))
	for _, t := range b.Tools {
		tools = append(tools, Tool{Name: strings.TrimSpace(t.Name), Description: strings.TrimSpace(t.Description)})
	}
	slices.SortStableFunc(tools, func(x, y Tool) int { return cmp.Compare(x.Name, y.Name) })
	b.Tools = tools
	if len(b.Tools) == 0 {
		b.Tools = nil
	}
	return b
}

// pinned reports whether b carries a prompt written by the user.
func (b Brief) pinned() bool { return strings.TrimSpace(b.Pinned) != "" }

// validate reports what makes a normalized brief unusable.
func (b Brief) validate() error {
	if b.Name == "" {
		return fmt.Errorf("%w: no agent name", ErrInvalidBrief)
	}
	if b.pinned() {
		return nil
	}
	if b.Task == "" && b.Role == "" && b.Contribution == "" {
		return fmt.Errorf("%w: agent %q: no task, role or contribution to expand", ErrInvalidBrief, b.Name)
	}
	for i, t := range b.Tools {
		if t.Name == "" {
			return fmt.Errorf("%w: agent %q: tool %d has no name", ErrInvalidBrief, b.Name, i+1)
		}
	}
	return nil
}

// cacheKey is what Key hashes.
type cacheKey struct {
	Brief Brief  `json:"brief"`
	Model string `json:"model"`
	// MetaPrompt is the hash of the instructions, so that changing them
	// retires every prompt written under the old ones.
	MetaPrompt string `json:"metaprompt"`
}

// Key returns the cache key of a brief expanded by the named model: the
// hex SHA-256 of the canonical JSON of the brief (normalized, Pinned left
// out), the model name and a hash of the meta-prompt. The same brief with
// another model, or under other instructions, has another key.
func Key(b Brief, model string) string {
	b = b.normalized()
	b.Pinned = ""
	sum := sha256.Sum256([]byte(instructions))
	raw, err := json.Marshal(cacheKey{Brief: b, Model: model, MetaPrompt: hex.EncodeToString(sum[:])})
	if err != nil {
		// Only strings and slices of structs of strings: cannot fail.
		panic("metaprompt: encode cache key: " + err.Error())
	}
	h := sha256.Sum256(raw)
	return hex.EncodeToString(h[:])
}

// Request returns the messages that ask a model to expand b: the
// meta-prompt as the system message and the brief as the user message.
func Request(b Brief) []llms.MessageContent {
	return []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, instructions),
		llms.TextParts(llms.ChatMessageTypeHuman, renderBrief(b.normalized())),
	}
}

// renderBrief writes the user message of a request.
func renderBrief(b Brief) string {
	var sb strings.Builder
	sb.WriteString("Write the system prompt for this agent.\n\n")
	field := func(name, value string) {
		if value == "" {
			value = "(not given)"
		}
		fmt.Fprintf(&sb, "%s: %s\n", name, value)
	}
	field("Name", b.Name)
	field("Role", b.Role)
	field("Capabilities", b.Capabilities)
	field("Expected contribution", b.Contribution)
	field("Locale", cmp.Or(b.Locale, "(not given: English)"))
	if len(b.Tools) == 0 {
		sb.WriteString("Tools: none\n")
	} else {
		sb.WriteString("Tools:\n")
		for _, t := range b.Tools {
			if t.Description == "" {
				fmt.Fprintf(&sb, "- %s\n", t.Name)
				continue
			}
			fmt.Fprintf(&sb, "- %s: %s\n", t.Name, oneLine(t.Description))
		}
	}
	sb.WriteString("Task:\n")
	sb.WriteString(cmp.Or(b.Task, "(not given: derive it from the role and the expected contribution)"))
	sb.WriteString("\n")
	return sb.String()
}

// oneLine joins the lines of s with spaces, so a tool description stays
// one list item.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
