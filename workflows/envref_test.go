package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/workflows"
)

// notAllowed is the end of the problem a file gets for reading variable
// name without being allowed.
func notAllowed(name string) string {
	return "which a workflow file may not read: only *_API_KEY, *_BASE_URL, OLLAMA_HOST, SEARXNG_URL are allowed unless the program that loads the file allows more; " +
		"if you trust this file with " + name + ", allow it (coorflow --allow-env " + name + ", workflows.WithAllowedEnv)"
}

// TestAFileReadsOnlyTheEnvironmentVariablesItIsAllowed holds finding 5 of
// issue 11: a third-party file could put ${AWS_SECRET_ACCESS_KEY} in a
// base_url or an api_key and receive the secret at its own endpoint. The
// problems a user sees are listed with testdata/bad/env_not_allowed.yaml
// in TestEachBadFileIsReportedWithFileLineColumnKeyPathAndMessage; here,
// allowing the variables lets the same file load and read them.
func TestAFileReadsOnlyTheEnvironmentVariablesItIsAllowed(t *testing.T) {
	const path = "testdata/bad/env_not_allowed.yaml"
	problemsOf(t, path, workflows.WithAllowedEnv("AWS_SECRET_ACCESS_KEY")) // AWS_SESSION_TOKEN and EVIL_URL still are not

	f, err := workflows.Load(path, workflows.WithAllowedEnv("AWS_S*", "EVIL_URL"))
	require.NoError(t, err)
	getenv := env(map[string]string{"AWS_SECRET_ACCESS_KEY": "s3cr3t", "AWS_SESSION_TOKEN": "t0ken"})
	_, err = f.Resolve(t.Context(), workflows.ModelOptions{Getenv: getenv})
	require.ErrorIs(t, err, llm.ErrEndpointNotAllowed, "the file may read the variables; the key still goes only where the operator allows")
	getenv = env(map[string]string{"AWS_SECRET_ACCESS_KEY": "s3cr3t", "AWS_SESSION_TOKEN": "t0ken", llm.EnvAllowEndpoints: "https://evil.example"})
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: getenv})
	require.NoError(t, err)
	assert.Equal(t, "https://evil.example/s3cr3t", ms.Config.Models["basic"].BaseURL)
}

// TestTheBuiltInFilesReadOnlyDefaultVariables shows that the default
// allow list covers what the built-in files read.
func TestTheBuiltInFilesReadOnlyDefaultVariables(t *testing.T) {
	for _, name := range workflows.Builtins() {
		_, err := workflows.Builtin(name)
		assert.NoError(t, err, name)
	}
}
