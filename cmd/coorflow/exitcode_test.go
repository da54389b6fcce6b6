package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGoRunShowsTheExitCodeItHides: under go run a run waiting for an
// answer exits 1, not 3; go run prints "exit status 3" last on stderr,
// and the README's exit-code table says so.
func TestGoRunShowsTheExitCodeItHides(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(readme)), " ")
	table := strings.Index(text, "Exit codes: `0` done;")
	require.GreaterOrEqual(t, table, 0)
	assert.Contains(t, text[table:], "These are the codes of the built binary (`go build ./cmd/coorflow`, `go install`): "+
		"`go run` exits `1` whatever the code, and prints the real one as the last line of stderr (`exit status 3`)")

	cmd := exec.CommandContext(t.Context(), "go", "run", "./cmd/coorflow", "run", "examples/research", "--input", "How fast is SQLite?")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=", "COORFLOW_MODEL=", "COORFLOW_DB="+filepath.Join(t.TempDir(), "c.db"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	assert.Equal(t, 1, ee.ExitCode(), "go run turns 3 into 1")
	assert.True(t, strings.HasSuffix(stderr.String(), "\nexit status 3\n"), "the code is on stderr:\n%s", stderr.String())
}
