package store_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memory"
)

// Two agents edit the same JSON plan from the same revision: changes to
// different fields merge, a change to a field both touched is a conflict.
func Example() {
	ctx := context.Background()
	s := memory.New(store.Config{})

	m, _ := s.Add(ctx, "alice", "mission/run-1/plan", `{"title":"draft","steps":[]}`,
		store.Attrs{ContentType: store.ContentJSON})
	read := m.Revision

	_, err := s.Edit(ctx, "alice", "mission/run-1/plan", store.Replace(read, `{"title":"final","steps":[]}`))
	fmt.Println("first edit:", err)
	_, err = s.Edit(ctx, "alice", "mission/run-1/plan", store.Replace(read, `{"title":"draft","steps":["search"]}`))
	fmt.Println("second edit, other field:", err)
	_, err = s.Edit(ctx, "alice", "mission/run-1/plan", store.Replace(read, `{"title":"other","steps":[]}`))
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		fmt.Println("third edit, same field: conflict on", ce.Fields, "current revision", ce.Current)
	}
	it, _ := s.Get(ctx, "alice", "mission/run-1/plan")
	fmt.Println(it.Content, "revision", it.Revision)

	_, err = s.Get(ctx, "bob", "mission/run-1/plan")
	fmt.Println("bob:", errors.Is(err, store.ErrNotFound))
	// Output:
	// first edit: <nil>
	// second edit, other field: <nil>
	// third edit, same field: conflict on [title] current revision 3
	// {"title":"final","steps":["search"]} revision 3
	// bob: true
}

// Read pages through a large item by byte offset.
func ExampleStore_Read() {
	ctx := context.Background()
	s := memory.New(store.Config{})
	_, _ = s.Add(ctx, "alice", "mission/run-1/outputs/report", "first part, second part, third part", store.Attrs{})

	for off := int64(0); ; {
		c, err := s.Read(ctx, "alice", "mission/run-1/outputs/report", off, 12)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%q\n", c.Content)
		if c.EOF {
			break
		}
		off = c.Next
	}
	// Output:
	// "first part, "
	// "second part,"
	// " third part"
}

// An agent gets a view bound to its owner that hides what it may not see.
func ExampleBind() {
	ctx := context.Background()
	s := memory.New(store.Config{})
	_, _ = s.Add(ctx, "alice", "mission/run-1/agents/a1/key", "a1's key",
		store.Attrs{Visibility: store.AgentScoped("a1")})

	a2 := store.Bind(s, "alice", store.BindViewer(store.Viewer{Task: "step-2", Agent: "a2"}), store.BindReadOnly())
	_, err := a2.Get(ctx, "mission/run-1/agents/a1/key")
	fmt.Println(err)
	// Output:
	// store: get "mission/run-1/agents/a1/key" (owner "alice"): no such item
}
