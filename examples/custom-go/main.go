// Command custom-go is a workflow written in Go with a node and a tool of
// its own: the measure node counts the words and sentences of a text; when
// its sentences run long, an editor agent (a ReAct agent) rewrites it,
// calling the simpler_word tool for the hard words.
//
//	go run ./examples/custom-go "Your text."
//
// It runs offline on a scripted model unless COORFLOW_MODEL or
// OPENAI_API_KEY configure a provider.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/tools"
)

// Stats are what the measure node finds.
type Stats struct {
	Words     int     `json:"words"`
	Sentences int     `json:"sentences"`
	PerSent   float64 `json:"words_per_sentence"`
}

// The workflow's channels: typed keys, checked by the compiler.
var (
	text   = graph.NewKey[string]("text")
	stats  = graph.NewKey[Stats]("stats")
	edited = graph.NewKey[string]("edited")
)

// measure is the custom node: plain Go over the state.
func measure(ctx context.Context, s graph.State) (graph.Command, error) {
	t := text.Get(s)
	st := Stats{Words: len(strings.Fields(t)), Sentences: max(1, strings.Count(t, ".")+strings.Count(t, "?")+strings.Count(t, "!"))}
	st.PerSent = float64(st.Words) / float64(st.Sentences)
	return graph.Update(stats.Set(st)), nil
}

// simpler is the custom tool: a tiny thesaurus.
var simpler = tools.Typed("simpler_word", "Returns a simpler word for a hard one.",
	json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`),
	func(ctx context.Context, a struct{ Word string }) (string, error) {
		plain := map[string]string{"utilize": "use", "commence": "start", "subsequently": "then", "approximately": "about"}
		if w, ok := plain[strings.ToLower(a.Word)]; ok {
			return w, nil
		}
		return a.Word + " (no simpler word)", nil
	})

// build compiles the workflow over the model.
func build(model llm.ModelInfo, m *llm.Models) (*graph.Runnable, error) {
	reg, err := tools.NewRegistry(simpler)
	if err != nil {
		return nil, err
	}
	basic, err := m.Model(llm.TierBasic)
	if err != nil {
		return nil, err
	}
	editor, err := react.New(react.Config{Name: "editor", Model: basic, Info: model, Tools: reg,
		SystemPrompt: "You rewrite texts in short, plain sentences. Use simpler_word for hard words. Answer with the text only."})
	if err != nil {
		return nil, err
	}
	g := graph.New("custom", text, stats, edited)
	g.AddNode("measure", measure)
	g.AddNode("editor", editor.Node(
		func(s graph.State) (react.Task, error) {
			return react.Task{Input: fmt.Sprintf("Rewrite this text (%.0f words per sentence):\n%s", stats.Get(s).PerSent, text.Get(s))}, nil
		},
		func(r *react.Result) (graph.Command, error) { return graph.Update(edited.Set(r.Output)), nil }))
	g.AddEdge(graph.Start, "measure")
	g.AddConditionalEdges("measure", func(ctx context.Context, s graph.State) (string, error) {
		if stats.Get(s).PerSent > 12 {
			return "long", nil
		}
		return "fine", nil
	}, graph.Branches{"long": "editor", "fine": graph.End})
	g.AddEdge("editor", graph.End)
	return g.Compile()
}

// demo is the scripted model: the editor asks for a simpler word twice,
// then answers.
var demo = scripted.Script{Agents: map[string][]scripted.Reply{"editor": {
	{ToolCalls: []scripted.ToolCall{{Name: "simpler_word", Arguments: `{"word":"utilize"}`}}},
	{ToolCalls: []scripted.ToolCall{{Name: "simpler_word", Arguments: `{"word":"subsequently"}`}}},
	{Text: "We use the engine every day. Then we check the results."},
}}}

// models returns the configured provider (OPENAI_API_KEY, COORFLOW_MODEL),
// or the scripted model.
func models(ctx context.Context) (*llm.Models, llm.ModelInfo, error) {
	if os.Getenv("OPENAI_API_KEY") == "" && os.Getenv(llm.EnvModel) == "" {
		m, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: scripted.New(demo)}})
		return m, llm.ModelInfo{Tier: "basic", Model: "scripted"}, err
	}
	cfg := llm.Config{Models: map[llm.Tier]llm.ModelConfig{llm.TierBasic: {Provider: llm.ProviderOpenAI, Model: "gpt-4o-mini"}}}
	if err := cfg.ApplyEnv(os.Getenv); err != nil {
		return nil, llm.ModelInfo{}, err
	}
	m, err := llm.New(ctx, cfg)
	return m, llm.ModelInfo{Tier: "basic", Model: cfg.Models[llm.TierBasic].Model}, err
}

func run(ctx context.Context, w io.Writer, input string, m *llm.Models, info llm.ModelInfo) error {
	r, err := build(info, m)
	if err != nil {
		return err
	}
	for ev, err := range r.Stream(ctx, graph.Input(text.Set(input))) {
		if err != nil {
			return err
		}
		if res, ok := ev.Data.(tools.ResultEvent); ok {
			fmt.Fprintf(w, "  tool %s → %s\n", res.Name, res.Output)
		}
		switch ev.Kind {
		case graph.EventNodeEnd:
			fmt.Fprintf(w, "✓ %s\n", ev.Node)
		case graph.EventRunEnd:
			st := stats.Get(ev.State)
			fmt.Fprintf(w, "%d words in %d sentences\n", st.Words, st.Sentences)
			if out := edited.Get(ev.State); out != "" {
				fmt.Fprintf(w, "edited: %s\n", out)
			}
		}
	}
	return nil
}

func main() {
	input := "We utilize the engine on every single working day of the week and subsequently we check all of the results."
	if len(os.Args) > 1 {
		input = strings.Join(os.Args[1:], " ")
	}
	ctx := context.Background()
	m, info, err := models(ctx)
	if err == nil {
		err = run(ctx, os.Stdout, input, m, info)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "custom-go:", err)
		os.Exit(1)
	}
}
