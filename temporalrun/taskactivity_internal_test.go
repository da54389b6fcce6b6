package temporalrun

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/coorflow/coorflow/graph"
)

// TestQueuesForTask: a task goes to the queue of a label it carries
// ("tier:reasoning"), else of the longest prefix of its key, else of its
// node, else the default.
func TestQueuesForTask(t *testing.T) {
	q := Queues{Default: "main", Nodes: map[string]string{"team": "teams"},
		Tasks: map[string]string{"step:": "agents", "step:report": "reports", "tier:reasoning": "gpu", "kind:code": "sandbox"}}
	for _, c := range []struct {
		call graph.TaskCall
		want string
	}{
		{graph.TaskCall{Key: "step:s1", Node: "team", Labels: map[string]string{"tier": "reasoning"}}, "gpu"},
		{graph.TaskCall{Key: "build:ada", Node: "team", Labels: map[string]string{"tier": "reasoning"}}, "gpu"},
		{graph.TaskCall{Key: "step:s1", Node: "team", Labels: map[string]string{"tier": "basic"}}, "agents"},
		{graph.TaskCall{Key: "step:report", Node: "team"}, "reports"},
		{graph.TaskCall{Key: "build:ada", Node: "team"}, "teams"},
		{graph.TaskCall{Key: "build:ada", Node: "other"}, "main"},
		// Of two labels with a queue, the first by name.
		{graph.TaskCall{Key: "x", Labels: map[string]string{"tier": "reasoning", "kind": "code"}}, "sandbox"},
	} {
		assert.Equal(t, c.want, q.forTask(c.call), "%+v", c.call)
	}
}
