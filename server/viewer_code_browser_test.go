package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/tools"
)

// pythonCode is Python whose meaning is in its line breaks and
// indentation, with what Markdown would read as emphasis and a heading.
const pythonCode = "import math\n\ndef area(r):\n    # __dunder__ *not* emphasis\n    return math.pi * r ** 2\n\nfor r in [1, 2]:\n    print(f\"{r}: {area(r):.2f}\")"

// pythonOutput is what pythonCode prints.
const pythonOutput = "1: 3.14\n2: 12.57\n"

// pythonGraph is the workflow "py": its agent "coder" calls a tool named
// python, as the built-in one (tools.Python), with pythonCode; the tool
// prints pythonOutput.
func pythonGraph(t *testing.T) *graph.Runnable {
	t.Helper()
	args, err := json.Marshal(map[string]string{"code": pythonCode})
	require.NoError(t, err)
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"coder": {
		{ToolCalls: []scripted.ToolCall{{Name: "python", Arguments: string(args)}}},
		{Text: "The areas are 3.14 and 12.57."},
	}}})
	py := tools.Typed("python", "Runs Python.", json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`),
		func(ctx context.Context, a struct{ Code string }) (string, error) { return pythonOutput, nil })
	reg, err := tools.NewRegistry(py)
	require.NoError(t, err)
	agent, err := react.New(react.Config{Name: "coder", Model: model, Info: llm.ModelInfo{Tier: "basic", Model: "scripted"},
		SystemPrompt: "You compute with Python.", Tools: reg})
	require.NoError(t, err)
	g := graph.New("py", questionKey, answerKey)
	g.AddNode("compute", func(ctx context.Context, s graph.State) (graph.Command, error) {
		res, err := agent.Run(ctx, react.Task{Input: questionKey.Get(s)})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(answerKey.Set(res.Output)), nil
	})
	g.AddEdge(graph.Start, "compute")
	g.AddEdge("compute", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

func TestViewerShowsCodeInToolArgumentsAsCodeInChromium(t *testing.T) {
	e, ru := recordedRun(t, pythonGraph(t), "p", map[string]any{"question": "Areas of circles of radius 1 and 2?"})

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+ru.ID+"#token="+alice),
		chromedp.WaitVisible(`button.agent[data-name="coder"][data-status="done"]`),
		chromedp.Click(`button.agent[data-name="coder"]`),
		chromedp.WaitVisible(`#detail tr.tool-call[data-tool="python"]`),
	))
	// Open the model calls, to see what the model asked for.
	_, err := chromedp.Run(ctx, chromedp.Evaluate[*int](`document.querySelectorAll("#detail details.model-call").forEach((d) => d.open = true), null`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(`#detail details.model-call li`)))
	type page struct {
		Args, ArgsShown, AskedFor, Output string
		ArgsTag, AskedTag, OutputTag      string
		Emphasis                          int
		ArgsWhiteSpace                    string
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[page](`(() => {
		const args = document.querySelector('#detail tr.tool-call[data-tool="python"] td.tool-args dd[data-field="code"]');
		const asked = document.querySelector('#detail details.model-call li dd[data-field="code"]');
		const out = document.querySelector('#detail tr.tool-call[data-tool="python"] td.tool-output');
		const code = (n) => n && n.querySelector("pre > code");
		return {
			args: code(args) ? code(args).textContent : args.textContent,
			argsShown: args.innerText,
			askedFor: code(asked) ? code(asked).textContent : asked.textContent,
			output: code(out) ? code(out).textContent : out.textContent,
			argsTag: args.firstElementChild.tagName,
			askedTag: asked.firstElementChild.tagName,
			outputTag: out.firstElementChild.tagName,
			emphasis: document.querySelectorAll("#detail td.tool-args em, #detail td.tool-args strong, #detail td.tool-args h1").length,
			argsWhiteSpace: code(args) ? getComputedStyle(code(args).parentElement).whiteSpace : "",
		};
	})()`))
	require.NoError(t, err)
	screenshot(t, ctx, "viewer-python.png")

	assert.Equal(t, "PRE", got.ArgsTag, "the code is a code block, not Markdown")
	assert.Equal(t, pythonCode, got.Args, "the code as written: line breaks, indentation, underscores and stars")
	assert.Equal(t, pythonCode, got.ArgsShown, "and shown so: %q", got.ArgsShown)
	assert.Equal(t, "pre", got.ArgsWhiteSpace, "lines are not wrapped into one another")
	assert.Zero(t, got.Emphasis, "nothing of the code read as Markdown")
	assert.Equal(t, "PRE", got.AskedTag, "what the model asked for shows the code as code too")
	assert.Equal(t, pythonCode, got.AskedFor)
	assert.Equal(t, "PRE", got.OutputTag, "the program's output as written")
	assert.Equal(t, pythonOutput, got.Output)
}
