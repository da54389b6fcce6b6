package runs_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
)

func TestParseConfigTakesReservedKeysApart(t *testing.T) {
	c, res, err := runs.ParseConfig([]byte(`{"model":"fast","user_id":"u1","thread_id":"t1","checkpoint_id":"c1","checkpoint_ns":"","run_id":"r1","delay":2}`))
	require.NoError(t, err)
	assert.Equal(t, runs.Config{"model": "fast", "user_id": "u1", "delay": float64(2)}, c)
	assert.Equal(t, runs.Reserved{ThreadID: "t1", CheckpointID: "c1", RunID: "r1"}, res)

	c, _, err = runs.ParseConfig([]byte(" null "))
	require.NoError(t, err)
	assert.Nil(t, c)
}

func TestParseConfigRefuses(t *testing.T) {
	deep := strings.Repeat(`{"a":`, runs.MaxConfigDepth+1) + "1" + strings.Repeat("}", runs.MaxConfigDepth+1)
	big := `{"x":"` + strings.Repeat("a", runs.MaxConfigBytes) + `"}`
	for _, tc := range []struct{ name, in, want string }{
		{"not an object", `[1,2]`, "runs: config: must be a JSON object of values by key"},
		{"not JSON", `{"a":`, "runs: config: not a JSON object"},
		{"oversize", big, "more than the 65536 a run's config may have"},
		{"too deep", deep, "values nested 33 deep, more than the 32"},
		{"host key", `{"coorflow.owner":"mallory"}`, `runs: config key "coorflow.owner": keys starting with coorflow. are the host's own runtime values`},
		{"reserved not a string", `{"thread_id":3}`, `runs: config key "thread_id": must be a string`},
		{"empty key", `{"":1}`, "runs: config: a key is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runs.ParseConfig([]byte(tc.in))
			require.ErrorIs(t, err, runs.ErrConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestConfigMerge(t *testing.T) {
	c, err := runs.Config{"a": 1.0, "b": "x"}.Merge(runs.Config{"b": "x", "c": true})
	require.NoError(t, err)
	assert.Equal(t, runs.Config{"a": 1.0, "b": "x", "c": true}, c)
	_, err = runs.Config{"b": "x"}.Merge(runs.Config{"b": "y"})
	require.ErrorIs(t, err, runs.ErrConfig)
	assert.EqualError(t, err, `runs: config key "b": given twice with different values ("x" and "y")`)
}

// TestConfigReachesNodes: a node reads the run's config, typed, and each
// read is a copy of its own.
func TestConfigReachesNodes(t *testing.T) {
	type limits struct {
		Max int `json:"max"`
	}
	var gotModel string
	var gotDelay int
	var gotLimits limits
	var again runs.Config
	var missing bool
	b := graph.New("cfg", graph.NewKey[string]("x"))
	b.AddNode("read", func(ctx context.Context, s graph.State) (graph.Command, error) {
		gotModel, _ = runs.ConfigValue[string](ctx, "model")
		gotDelay, _ = runs.ConfigValue[int](ctx, "delay")
		gotLimits, _ = runs.ConfigValue[limits](ctx, "limits")
		_, wrongType := runs.ConfigValue[int](ctx, "model")
		_, absent := runs.ConfigValue[string](ctx, "nothing")
		missing = !wrongType && !absent
		runs.ConfigFrom(ctx)["model"] = "changed"
		again = runs.ConfigFrom(ctx)
		return graph.Command{}, nil
	})
	b.AddEdge(graph.Start, "read")
	b.AddEdge("read", graph.End)
	r, err := b.Compile()
	require.NoError(t, err)
	c, _, err := runs.ParseConfig([]byte(`{"model":"fast","delay":3,"limits":{"max":7}}`))
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil, c.Option())
	require.NoError(t, err)
	assert.Equal(t, "fast", gotModel)
	assert.Equal(t, 3, gotDelay)
	assert.Equal(t, limits{Max: 7}, gotLimits)
	assert.True(t, missing, "a value of another type, or none, is reported absent")
	assert.Equal(t, "fast", again["model"], "a node changing its copy changes nothing for the next read")
}
