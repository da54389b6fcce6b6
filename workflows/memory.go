package workflows

import (
	"context"
	"fmt"
	"slices"

	"github.com/coorflow/coorflow/store/memories"
)

// memories returns the owner memories the file uses — when its settings
// turn memory on or it declares the remember or recall tool — or nil.
func (f *File) memories(env Env) (*memories.Memories, error) {
	uses := f.spec.Settings.Memory != nil && f.spec.Settings.Memory.Enabled
	for _, t := range f.spec.tools {
		uses = uses || slices.Contains([]string{memories.RememberTool, memories.RecallTool}, t.Name)
	}
	if !uses {
		return nil, nil
	}
	m, err := memories.New(memories.Config{Store: env.Store, Owner: env.Owner, Embedder: env.Embedder})
	if err != nil {
		return nil, fmt.Errorf("workflows: %s: %w", f.path, err)
	}
	return m, nil
}

// recall is the planner's recall of what earlier threads learned, when
// the file's settings turn memory on.
func (b *build) recall() func(ctx context.Context, request string) (string, error) {
	set := b.f.spec.Settings.Memory
	if b.mem == nil || set == nil || !set.Enabled {
		return nil
	}
	limit := set.Recall
	return func(ctx context.Context, request string) (string, error) {
		found, err := b.mem.Recall(ctx, b.mem.OwnerOf(ctx), request, limit)
		if err != nil {
			return "", err
		}
		return memories.Render(found), nil
	}
}

// teamMemories is what a team node remembers into: the file's memories
// when its settings turn memory on.
func (b *build) teamMemories() *memories.Memories {
	if set := b.f.spec.Settings.Memory; set == nil || !set.Enabled {
		return nil
	}
	return b.mem
}
