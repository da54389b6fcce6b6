package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrorText renders an error from Run or Registry.Run as the text of a
// tool-result message, written for the model: what went wrong and what it
// can do about it (the tools that exist, the arguments the schema expects).
// The "tools: " prefix of this package's error messages is left out. It
// returns "" for a nil error.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	var re *recordedError
	if errors.As(err, &re) {
		return re.text
	}
	var (
		te  *ToolError
		pe  *PanicError
		ae  *ArgumentError
		ute *UnknownToolError
	)
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("Error: tool %q failed: %s", te.Tool, strings.TrimPrefix(te.Err.Error(), "tools: "))
	case errors.As(err, &pe):
		return fmt.Sprintf("Error: tool %q crashed: %v", pe.Tool, pe.Value)
	case errors.As(err, &ae):
		return argumentErrorText(ae)
	case errors.As(err, &ute):
		return fmt.Sprintf("Error: there is no tool named %q. The tools you can call are: %s.",
			ute.Name, availableList(ute.Available))
	}
	return "Error: " + strings.TrimPrefix(err.Error(), "tools: ")
}

func argumentErrorText(e *ArgumentError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Error: invalid arguments for tool %q:\n", e.Tool)
	for _, p := range e.Problems {
		b.WriteString("- " + p.String() + "\n")
	}
	var compact bytes.Buffer
	if len(e.Schema) > 0 && json.Compact(&compact, e.Schema) == nil {
		b.WriteString("The arguments must match this JSON Schema: " + compact.String() + "\n")
	}
	b.WriteString("Correct the arguments and call the tool again.")
	return b.String()
}
