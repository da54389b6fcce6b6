package workflows

import (
	"context"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
)

// runStore returns s with the board's size check (board.WarnLarge): a
// write that leaves an item loaded into every prompt larger than
// board.DefaultWarnSize shows as a warning event (agentevent.Warning) in
// the stream of the run whose node wrote it. A write outside a run reports
// nowhere.
func runStore(s store.Store) store.Store {
	return board.WarnLarge(s, 0, publishWarning)
}

func publishWarning(ctx context.Context, w board.Warning) {
	graph.Emit(ctx, agentevent.Warning{Value: w})
}
