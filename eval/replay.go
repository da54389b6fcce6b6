package eval

import (
	"context"

	"github.com/coorflow/coorflow/graph"
)

// ReplaySource answers the model calls of trials from the recordings of
// an earlier eval run.
type ReplaySource interface {
	// EvalRun names the eval run replayed.
	EvalRun() string
	// Replay runs trial t of case c from the recording of the same case
	// and repeat: ok when it was replayed to its end without divergence
	// (final is then its final state, and it sets the trial's Runs,
	// Agents, Steps and RecordedSpend from the recording); false with
	// Trial.Diverged set when it diverged or has no recording, to be run
	// on the models.
	Replay(ctx context.Context, c *Case, t *Trial) (final graph.State, ok bool, err error)
}

// replay tries to answer the trial from the replay source.
func (e *evaluation) replay(ctx context.Context, c *Case, t *Trial) (graph.State, bool, error) {
	st, ok, err := e.cfg.Replay.Replay(ctx, c, t)
	if err != nil || !ok {
		return graph.State{}, false, err
	}
	t.Replayed = true
	return st, true, nil
}
