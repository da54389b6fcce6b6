package metaprompt_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/metaprompt"
	"github.com/coorflow/coorflow/store"
)

// fixedTime is the clock of the expanders under test.
var fixedTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// researcher is the brief most tests expand.
func researcher() metaprompt.Brief {
	return metaprompt.Brief{
		Name:         "market_researcher",
		Role:         "market researcher",
		Capabilities: "finds and compares market reports and statistics",
		Contribution: "market size and growth figures, with sources, for the report writer",
		Tools: []metaprompt.Tool{
			{Name: "web_search", Description: "Search the web.\nReturns titles, links and snippets."},
			{Name: "fetch_url", Description: "Fetch a web page as text."},
		},
		Locale: "en-US",
		Task:   "Estimate the 2024 market for electric cargo bikes in Germany.",
	}
}

// agentLabel is the label of the model calls made for b.
func agentLabel(b metaprompt.Brief) string { return "metaprompt:" + b.Name }

// goodPrompt is a prompt that passes Check.
const goodPrompt = `You estimate the 2024 market for electric cargo bikes in Germany for the report writer.

# Steps
1. Search for recent market reports with web_search.
2. Read the most relevant sources with fetch_url and note each figure with its date.
3. Reason about where the sources agree and disagree before you settle on an estimate.

# Output Format
A Markdown section:
- **Analysis:** how the figures fit together and which you trust.
- **Conclusion:** the market size and growth, with sources.

# Examples
**Analysis:** [two sources agree on 180,000 units; a third counts only B2B sales]
**Conclusion:** [about 180,000 units in 2024, growing 10% a year (sources 1 and 2)]

# Notes
- Say so when a figure is older than two years.
- Answer in English.`

// prompt builds a prompt from a first line and sections given as heading
// and body.
func prompt(first string, sections ...string) string {
	var b strings.Builder
	b.WriteString(first)
	for i := 0; i+1 < len(sections); i += 2 {
		b.WriteString("\n\n" + sections[i] + "\n" + sections[i+1])
	}
	return b.String()
}

// expander returns an Expander over model, caching in cache when not nil.
func expander(t *testing.T, model *scripted.Model, name string, cache store.Store) *metaprompt.Expander {
	t.Helper()
	cfg := metaprompt.Config{Model: model, ModelName: name, Tier: "reasoning", Now: func() time.Time { return fixedTime }}
	if cache != nil {
		cfg.Cache, cfg.Owner = cache, "alice"
	}
	e, err := metaprompt.New(cfg)
	require.NoError(t, err)
	return e
}

// replies scripts the replies to the calls made for b.
func replies(b metaprompt.Brief, texts ...string) *scripted.Model {
	rs := make([]scripted.Reply, len(texts))
	for i, t := range texts {
		rs[i] = scripted.Reply{Text: t}
	}
	return scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{agentLabel(b): rs}})
}
