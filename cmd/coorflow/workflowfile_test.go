package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidateReportsSchemaAndOtherProblemsOfAFileAtOnce: a schema error
// (a tier that does not exist, a field llm nodes do not have) does not
// hide the unknown node and the unknown tool of the same file.
func TestValidateReportsSchemaAndOtherProblemsOfAFileAtOnce(t *testing.T) {
	code, stdout, stderr := newCLI(t).run("validate", "../../workflows/testdata/bad/schema_and_semantic_problems.yaml")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	const f = "../../workflows/testdata/bad/schema_and_semantic_problems.yaml"
	assert.Equal(t, f+`:8:11: nodes.a.tier: "fast" is not one of basic, reasoning, vision, code`+"\n"+
		f+`:11:5: nodes.a.tools: unknown field "tools" (known fields: delay, description, emit, output, prompt, retry, set, system, tier, timeout, type)`+"\n"+
		f+`:12:25: nodes.b.tool: unknown tool "shell"`+"\n"+
		f+`:15:19: edges[1].to: unknown node "c" (did you mean "a"?)`+"\n", stderr)
}

// TestALoopThatNeverEndsNamesTheFilesStepLimit: the error a YAML user
// sees names the setting of the file, not Go's option.
func TestALoopThatNeverEndsNamesTheFilesStepLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "forever.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: coorflow/v1
name: forever
input: topic
state:
  topic: {type: string}
  n: {type: integer}
settings: {step_limit: 5}
nodes:
  tick: {type: router, routes: [{when: "state.n < 3", to: tick}, {to: end}]}
edges:
  - {from: start, to: tick}
`), 0o600))
	code, _, stderr := newCLI(t).run("run", path, "--input", "go")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "graph: step limit of 5 reached (last step ran tick); raise it with settings.step_limit in "+path+" if the loop is intended")
	assert.NotContains(t, stderr, "graph.StepLimit")
}
