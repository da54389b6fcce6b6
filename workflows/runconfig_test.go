package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/workflows"
)

// configFile routes on config.fast and counts to config.rounds; both are
// declared with their defaults, which a run's config replaces.
const configFile = `apiVersion: coorflow/v1
name: configured
config: {fast: false, rounds: 2, label: "n"}
state:
  n: {type: integer}
  log: {type: array, items: {type: string}, reducer: append}
nodes:
  tick:
    type: router
    routes:
      - {when: "config.fast", to: end}
      - {when: "state.n < config.rounds", to: tick}
      - {to: end}
    set: {n: "state.n + 1", log: "config.label + string(state.n)"}
edges:
  - {from: start, to: tick}
`

// TestAConditionReadsTheRunsConfig: a condition and a set expression read
// the run's config where it gives a key, the file's default where not.
func TestAConditionReadsTheRunsConfig(t *testing.T) {
	f, err := workflows.Parse("configured.yaml", []byte(configFile))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{})
	require.NoError(t, err)
	run := func(raw string) ([]string, any, error) {
		c, _, err := runs.ParseConfig([]byte(raw))
		require.NoError(t, err)
		var path []string
		var log any
		for ev, err := range r.Stream(t.Context(), nil, c.Option()) {
			if err != nil {
				return path, log, err
			}
			switch ev.Kind {
			case graph.EventNodeStart:
				path = append(path, ev.Node)
			case graph.EventRunEnd:
				log, _ = ev.State.Value("log")
			}
		}
		return path, log, nil
	}
	path, log, err := run(`null`)
	require.NoError(t, err)
	assert.Equal(t, []string{"tick", "tick", "tick"}, path, "the defaults: two rounds")
	assert.Equal(t, []any{"n0", "n1", "n2"}, log)

	path, _, err = run(`{"fast": true}`)
	require.NoError(t, err)
	assert.Equal(t, []string{"tick"}, path, "config.fast ends at once")

	path, log, err = run(`{"rounds": 4, "label": "r", "other": [1]}`)
	require.NoError(t, err)
	assert.Equal(t, []string{"tick", "tick", "tick", "tick", "tick"}, path)
	assert.Equal(t, []any{"r0", "r1", "r2", "r3", "r4"}, log, "an undeclared key is for Go nodes only, and harms nothing")

	_, _, err = run(`{"rounds": "many"}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `workflows: config.rounds: the run's config gives a string ("many"); the file declares an integer (default 2)`)
	_, _, err = run(`{"rounds": 2.5}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `config.rounds: the run's config gives a number (2.5)`)
}

// TestTheConfigSchemaGivesEachKeysTypeAndDefault: each key of the config
// section is a property of the type of its default; a file without one
// has none.
func TestTheConfigSchemaGivesEachKeysTypeAndDefault(t *testing.T) {
	f, err := workflows.Parse("configured.yaml", []byte(configFile))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"title": "configured config", "type": "object", "additionalProperties": true,
		"properties": map[string]any{
			"fast":   map[string]any{"title": "fast", "type": "boolean", "default": false},
			"rounds": map[string]any{"title": "rounds", "type": "integer", "default": 2},
			"label":  map[string]any{"title": "label", "type": "string", "default": "n"},
		},
	}, f.ConfigSchema())
	plain, err := workflows.Parse("plain.yaml", []byte(`apiVersion: coorflow/v1
name: plain
state:
  n: {type: integer}
nodes:
  tick: {type: router, routes: [{to: end}], set: {n: "state.n + 1"}}
edges:
  - {from: start, to: tick}
`))
	require.NoError(t, err)
	assert.Nil(t, plain.ConfigSchema())
}
