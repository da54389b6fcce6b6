package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidateAndRunReadOnlyTheEnvironmentAndFilesTheyAreAllowed shows
// the command line's side of findings 3 and 5 of issue 11: a file that
// reads a variable outside the default list, or includes a file outside
// its directory, is refused with the flag that allows it; given that
// flag, it is valid.
func TestValidateAndRunReadOnlyTheEnvironmentAndFilesTheyAreAllowed(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf", "workflow.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(wf), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "lib"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lib", "child.yaml"), []byte(`apiVersion: coorflow/v1
name: child
nodes:
  a: {type: llm, prompt: "hi", output: answer}
edges:
  - {from: start, to: a}
  - {from: a, to: end}
state: {answer: {type: string}}
`), 0o644))
	require.NoError(t, os.WriteFile(wf, []byte(`apiVersion: coorflow/v1
name: wf
models:
  basic: {provider: openai, model: gpt-4o, base_url: "${CORP_LLM_URL}"}
nodes:
  s: {type: subgraph, file: ../lib/child.yaml}
edges:
  - {from: start, to: s}
  - {from: s, to: end}
`), 0o644))
	libDir, err := filepath.EvalSymlinks(filepath.Join(dir, "lib"))
	require.NoError(t, err)
	wfDir := filepath.Dir(libDir) + "/wf"

	c := newCLI(t)
	code, stdout, stderr := c.run("validate", wf)
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, wf+`:4:55: models.basic.base_url: ${CORP_LLM_URL} reads environment variable CORP_LLM_URL, which a workflow file may not read: `+
		`only *_API_KEY, *_BASE_URL, OLLAMA_HOST, SEARXNG_URL are allowed unless the program that loads the file allows more; `+
		`if you trust this file with CORP_LLM_URL, allow it (coorflow --allow-env CORP_LLM_URL, workflows.WithAllowedEnv)
`+wf+`:6:29: nodes.s.file: subgraph file ../lib/child.yaml is outside the workflow's directory `+wfDir+` (it is `+libDir+`/child.yaml): `+
		`a workflow may only use files in its own directory tree; move the file there, or let the program that loads the workflow allow its directory (coorflow --include-root DIR, workflows.WithIncludeRoot)
`, stderr)

	code, stdout, stderr = c.run("validate", "--allow-env", "CORP_*", "--include-root", filepath.Join(dir, "lib"), wf)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "ok  "+wf+"  (wf: 1 nodes)\n    when it runs, it executes:\n      url ${CORP_LLM_URL}  (models.basic.base_url, "+wf+":4)\n", stdout)

	code, _, stderr = c.run("run", "--input", "x", wf)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "reads environment variable CORP_LLM_URL")
	code, _, stderr = c.run("run", "--allow-env", "CORP_LLM_URL", "--include-root", filepath.Join(dir, "lib"), "--input", "x", wf)
	assert.Equal(t, exitFailed, code)
	assert.Equal(t, "coorflow: workflows: "+wf+": models.basic.base_url: environment variable CORP_LLM_URL is not set\n", stderr,
		"allowed, the file loads and reads the variable")

	// serve loads the files it serves under the same rules.
	c.env["COORFLOW_TOKEN"] = "secret"
	code, _, stderr = c.run("serve", "--addr", "127.0.0.1:0", wf)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, wf+`:4:55: models.basic.base_url: ${CORP_LLM_URL} reads environment variable CORP_LLM_URL, which a workflow file may not read`)
	c.env["COORFLOW_TOKEN"] = "secret" // serve took it out of the environment
	code, _, stderr = c.run("serve", "--allow-env", "CORP_LLM_URL", "--include-root", filepath.Join(dir, "lib"), "--addr", "127.0.0.1:0", wf)
	assert.NotEqual(t, exitOK, code)
	assert.Contains(t, stderr, "environment variable CORP_LLM_URL is not set", "allowed, serve loads the file and reads the variable")
}
