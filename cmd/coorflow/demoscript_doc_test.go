package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/scripted"
)

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestTheDemoScriptDocRunsAsWritten: docs/demo-scripts.md, which the
// missing-key error points to, holds a file and its script that run
// offline as it says, and a format block that loads.
func TestTheDemoScriptDocRunsAsWritten(t *testing.T) {
	doc, err := os.ReadFile("../../docs/demo-scripts.md")
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "hello")
	require.NoError(t, os.Mkdir(dir, 0o755))
	var format string
	for _, m := range yamlBlock.FindAllStringSubmatch(string(doc), -1) {
		body := m[1]
		switch first, _, _ := strings.Cut(body, "\n"); first {
		case "# hello/workflow.yaml":
			require.NoError(t, os.WriteFile(filepath.Join(dir, "workflow.yaml"), []byte(body), 0o644))
		case "# hello/demo.yaml":
			require.NoError(t, os.WriteFile(filepath.Join(dir, "demo.yaml"), []byte(body), 0o644))
		default:
			format = body
		}
	}
	_, err = scripted.Load(strings.NewReader(format))
	require.NoError(t, err, "the format block loads")

	c := newCLI(t)
	code, stdout, stderr := c.run("run", dir, "--input", "What is coorflow?")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "running offline on the scripted demo model "+filepath.Join(dir, "demo.yaml"))
	assert.Contains(t, stdout, "A scripted answer: coorflow ran this offline.")

	// Without the demo key, the error names the key, the node and the doc.
	b, err := os.ReadFile(filepath.Join(dir, "workflow.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workflow.yaml"), []byte(strings.Replace(string(b), "demo:\n  script: demo.yaml", "", 1)), 0o644))
	code, _, stderr = c.run("run", dir, "--input", "What is coorflow?")
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "coorflow: workflows: "+filepath.Join(dir, "workflow.yaml")+": llm: models.basic.api_key_env: environment variable OPENAI_API_KEY is not set "+
		"(it should hold the openai API key); to run offline instead, add \"demo: {script: demo.yaml}\" to the file and write in demo.yaml "+
		"the answers of its node \"answer\" (the format: docs/demo-scripts.md)\n", stderr)
}
