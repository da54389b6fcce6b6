package board_test

import (
	"context"
	"fmt"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/store/memory"
)

func Example() {
	ctx := context.Background()
	b, _ := board.New(memory.New(store.Config{}), "alice", "run-1")

	_, _ = b.SetPlan(ctx, map[string]any{"title": "compare Go web frameworks", "steps": []string{"search", "write"}}, 0)
	_, _ = b.AppendProgress(ctx, "researcher-1", "found 12 sources")
	ref, _ := b.PutOutput(ctx, "search/sources", "1. net/http …\n2. chi …\n")
	_, _ = b.PutHandoff(ctx, "researcher-1", "writer-1", "Sources are in "+ref)
	_, _ = b.PutPrivate(ctx, "researcher-1", "scratch", "half-formed ideas")

	writer := store.Viewer{Task: "write", Agent: "writer-1"}
	text, _ := b.Handoff(ctx, writer, "researcher-1", "writer-1")
	fmt.Println(text)
	page, _ := b.Read(ctx, writer, ref, 0, 12)
	fmt.Printf("%q next=%d eof=%v\n", page.Content, page.Next, page.EOF)

	visible, _ := b.Visible(ctx, writer)
	for _, m := range visible {
		fmt.Println(m.Path)
	}
	_, err := b.Get(ctx, writer, b.PrivatePrefix("researcher-1")+"scratch")
	fmt.Println(err)
	// Output:
	// Sources are in mission/run-1/outputs/search/sources
	// "1. net/http " next=12 eof=false
	// mission/run-1/handoffs/researcher%2D1-writer%2D1
	// mission/run-1/outputs/search/sources
	// mission/run-1/plan
	// mission/run-1/progress
	// store: get "mission/run-1/agents/researcher-1/scratch" (owner "alice"): no such item
}
