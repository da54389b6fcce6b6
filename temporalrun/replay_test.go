package temporalrun_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/coorflow/coorflow/temporalrun"
)

// TestHistoriesOfEarlierBuildsReplay replays a history recorded by the
// build before parallel tasks became activities of their own (a run whose
// fan-out step was one step activity) on this build, without a
// nondeterminism error: runs in flight across that deploy go on. The
// change needed no workflow.GetVersion patch because what triggers it,
// the task labels in a step's result, is absent from results recorded by
// the earlier build; a change that is not compatible by construction is
// guarded with GetVersion, and a history of the build before it is added
// here.
func TestHistoriesOfEarlierBuildsReplay(t *testing.T) {
	replayer := worker.NewWorkflowReplayer()
	temporalrun.RegisterReplay(replayer, temporalrun.NewGraphs(nil))
	require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/history-before-task-activities.json"))
}
