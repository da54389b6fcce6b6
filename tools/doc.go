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
// Built-in tools: Python runs python3 code in a bubblewrap sandbox (or, for
// trusted code, directly with a scrubbed environment);
// HTTPFetch fetches a URL and returns readable text, refusing private
// addresses unless allowed; WebSearch searches through a SearchProvider
// (NewSearXNG, NewTavily). FromLangChain adapts a langchaingo tool.
//
// Tools must honour their context: Run stops waiting at the deadline, but it
// cannot stop a goroutine that ignores cancellation.
package tools
