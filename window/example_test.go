package window_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/window"
)

func ExampleBuilder_Assemble() {
	ctx := context.Background()
	b, _ := board.New(memory.New(store.Config{}), "alice", "run-1")
	w := window.New(window.Config{Offloader: window.NewBoardStore(b, store.Viewer{Agent: "researcher-1"})})

	bigResult := strings.Repeat("row of a very large table\n", 4000) // about 26,000 tokens
	res, _ := w.Assemble(ctx, window.Request{
		Agent:  "researcher-1",
		Budget: window.Budget{MaxInputTokens: 8_192, ReserveForOutput: 1_024},
		Parts: []window.Part{
			{Name: "system", Kind: window.KindSystem, Text: "You are a researcher.", Required: true},
			{Name: "index", Kind: window.KindMemory, Text: strings.Repeat("memory item\n", 3000), Priority: board.PriorityLow},
			{Name: "task", Kind: window.KindTask, Text: "Summarize the table.", Required: true},
			{Name: "history", Kind: window.KindHistory, Messages: []llms.MessageContent{
				{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function",
					FunctionCall: &llms.FunctionCall{Name: "sql", Arguments: `{"query":"select *"}`}}}},
				{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "sql", Content: bigResult}}},
			}},
		},
	})
	for _, p := range res.Snapshot.Parts {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%-8s included=%-5v %s", p.Name, p.Included, p.Reason)))
	}
	for _, a := range res.Snapshot.Policies {
		fmt.Println(a.Policy, a.Ref)
	}
	// Output:
	// system   included=true
	// index    included=false over budget: needs 9,004 tokens, 6,976 left after higher-priority parts
	// task     included=true
	// history  included=true
	// offload mission/run-1/outputs/tool-results/researcher-1/sql-eabaf4211288a5bb
	// omit
}

func ExampleRenderResults() {
	fmt.Print(window.RenderResults([]window.Step{
		{ID: "s1", Title: "Collect sources", Summary: "Found 12 sources on Go routers.\nDetails follow.", Confidence: 0.9},
		{ID: "s2", Title: "Benchmark routers", Status: window.StepFailed, Result: "tool unavailable"},
		{ID: "s3", Title: "Write the report", Status: window.StepPending},
	}))
	// Output:
	// 1. [done] s1 Collect sources (confidence 0.90): Found 12 sources on Go routers.
	// 2. [failed] s2 Benchmark routers: tool unavailable
	// 3. [pending] s3 Write the report
}
