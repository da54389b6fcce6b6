package temporalrun_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/coorflow/coorflow/temporalrun"
)

// TestHistoriesOfEarlierBuildsReplay replays a history recorded by an
// earlier build on this one, without a nondeterminism error: runs in
// flight across the deploy go on. Two changes of the workflow code came
// since: the tasks of a parallel step became activities of their own
// (compatible by construction: what triggers it, the task labels in a
// step's result, is absent from results the earlier build recorded, so its
// fan-out step stays one step activity), and the head read became a local
// activity, which is not compatible, so it is patched with
// workflow.GetVersion("local-head"): without the patch this replay fails
// with TMPRL1100. A change that is not compatible by construction is
// guarded the same way, and a history of the build before it is added
// here.
func TestHistoriesOfEarlierBuildsReplay(t *testing.T) {
	replayer := worker.NewWorkflowReplayer()
	temporalrun.RegisterReplay(replayer, temporalrun.NewGraphs(nil))
	require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/history-before-task-activities.json"))
	// A team whose agents ran as task activities (now the default)
	// on two worker processes, one killed mid-team: the node's activity
	// retried, its task updates asked again
	// (TestAKilledWorkerRepeatsOnlyTheTasksInFlight).
	require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/history-team-task-activities.json"))
}
