// Package tools gives models something to do: a Tool has a name, a
// description, a JSON Schema for its arguments and a call; a Registry holds
// tools by name and hands their definitions to a model; Run calls a tool the
// way a model asked for it, safely.
//
// Run (and Registry.Run) validates the arguments against the tool's schema
// (each schema is compiled once), applies a timeout (DefaultTimeout unless the
// call or the tool sets one), recovers a panic, and reports a Result that is
// ok, degraded (the tool did not answer in time: the model is told to continue
// without it) or failed. Result.Text is what the model should see in the
// tool-result message; for failures it is ErrorText, which names the problem
// in words a model can act on: the tools that exist when it invented one, the
// field and the expectation when its arguments were wrong.
//
//	reg, err := tools.NewRegistry(tools.Python(tools.PythonConfig{}), tools.WebSearch(tools.WebSearchConfig{Provider: searxng}))
//	if err != nil { ... }
//	resp, err := model.GenerateContent(ctx, msgs, llms.WithTools(reg.LLMTools()))
//	for _, tc := range resp.Choices[0].ToolCalls {
//		res := reg.Run(ctx, tc.FunctionCall.Name, json.RawMessage(tc.FunctionCall.Arguments), tools.RunOptions{})
//		msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
//			llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: res.Text()},
//		}})
//	}
//
// Inside a graph node, call tools through Observe, the twin of
// llm.Observe: a Caller journals each call (graph.Do), so that a node that
// runs again after an interrupt or a crash gets the recorded result and
// the tool is not called again, and publishes the tool_call and
// tool_result events that recorders and replays read. The ReAct agent
// (nodes/react), a workflow file's tool node and a Go node all call their
// tools this way.
//
// Typed derives a tool's argument schema from its Go argument type when
// none is given, from the same `json` and `jsonschema` tags as
// structured.Schema.
//
// Built-in tools: Python runs python3 code in a bubblewrap sandbox (or, for
// trusted code, directly with a scrubbed environment);
// HTTPFetch fetches a URL and returns readable text, refusing private
// addresses unless allowed; WebSearch searches through a SearchProvider
// (NewSearXNG, NewTavily). FromLangChain adapts a langchaingo tool.
//
// Tools must honour their context: Run stops waiting at the deadline, but it
// cannot stop a goroutine that ignores cancellation.
package tools
