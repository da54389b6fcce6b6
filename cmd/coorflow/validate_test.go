package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
		f+`:11:5: nodes.a.tools: unknown field "tools" (known fields: description, output, prompt, retry, set, system, tier, timeout, type)`+"\n"+
		f+`:12:25: nodes.b.tool: unknown tool "shell"`+"\n"+
		f+`:15:19: edges[1].to: unknown node "c" (did you mean "a"?)`+"\n", stderr)
}
