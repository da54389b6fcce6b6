package factory

import (
	"context"

	"github.com/coorflow/coorflow/metaprompt"
	"github.com/coorflow/coorflow/tools"
)

// ExpandWith returns a PromptWriter that writes an agent's system prompt
// with the meta-prompt stage, from the brief the builder wrote and the
// spec the plan gave. An agent whose prompt is pinned keeps it.
func ExpandWith(e *metaprompt.Expander, reg *tools.Registry) PromptWriter {
	return func(ctx context.Context, a Agent, locale string) (string, error) {
		if a.PromptPinned && a.Prompt != "" {
			return a.Prompt, nil
		}
		b := metaprompt.Brief{Name: a.Name, Role: a.Role, Locale: locale, Task: a.Brief}
		if a.Spec != nil {
			b.Capabilities, b.Contribution = a.Spec.Capabilities, a.Spec.Contribution
		}
		for _, name := range a.Tools {
			t := metaprompt.Tool{Name: name}
			if reg != nil {
				if tool, err := reg.Get(name); err == nil {
					t.Description = tool.Description()
				}
			}
			b.Tools = append(b.Tools, t)
		}
		p, err := e.Expand(ctx, b)
		if err != nil {
			return "", err
		}
		return p.Text, nil
	}
}
