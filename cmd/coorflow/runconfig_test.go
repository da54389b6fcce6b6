package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// configuredFile answers from its config: greeting and shout are declared
// with their defaults, which --config replaces.
const configuredFile = `apiVersion: coorflow/v1
name: configured
input: name
output: answer
config: {greeting: "hello", shout: false}
state:
  name: {type: string}
  answer: {type: string}
nodes:
  greet:
    type: router
    routes:
      - {when: "config.shout", to: end, set: {answer: "upper(config.greeting) + ' ' + upper(state.name)"}}
      - {to: end, set: {answer: "config.greeting + ' ' + state.name"}}
edges:
  - {from: start, to: greet}
`

// TestRunConfigFlagsReachTheFilesExpressions: --config KEY=VALUE and
// --config @FILE give the run's config, which the file's conditions and
// set expressions read; the run's recording keeps it.
func TestRunConfigFlagsReachTheFilesExpressions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "configured.yaml")
	require.NoError(t, os.WriteFile(path, []byte(configuredFile), 0o600))
	c := newCLI(t)
	code, stdout, stderr := c.run("run", path, "--input", "ada")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "hello ada")

	code, stdout, stderr = c.run("run", path, "--input", "ada", "--config", "shout=true", "--config", "greeting=hi")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "HI ADA")

	file := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"greeting": "good day", "shout": true}`), 0o600))
	code, stdout, stderr = c.run("run", path, "--input", "ada", "--config", "@"+file, "--config", "shout=false", "--json")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "good day ada", "a later flag replaces a key of the file")

	code, stdout, stderr = c.run("runs", "list", "--json", "--limit", "1")
	require.Equal(t, 0, code, stderr)
	var list []struct {
		Runtime map[string]string `json:"runtime"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &list), stdout)
	require.Len(t, list, 1)
	assert.JSONEq(t, `{"greeting":"good day","shout":false}`, list[0].Runtime["coorflow.config"], "the recording keeps the config")
}

func TestRunConfigFlagErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "configured.yaml")
	require.NoError(t, os.WriteFile(path, []byte(configuredFile), 0o600))
	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, []byte(`{"x":"`+strings.Repeat("a", 70<<10)+`"}`), 0o600))
	list := filepath.Join(dir, "list.json")
	require.NoError(t, os.WriteFile(list, []byte(`[1]`), 0o600))
	for _, tc := range []struct {
		name  string
		flags []string
		code  int
		want  string
	}{
		{"no key", []string{"--config", "=1"}, exitUsage, "--config =1: want KEY=VALUE (VALUE is JSON or text) or @FILE (a JSON object)"},
		{"oversize file", []string{"--config", "@" + big}, exitUsage, "more than the 65536 bytes a run's config may have"},
		{"not an object", []string{"--config", "@" + list}, exitUsage, "want a JSON object of values by key"},
		{"host key", []string{"--config", "coorflow.owner=bob"}, exitUsage, `--config: config key "coorflow.owner": keys starting with coorflow. are the host's own runtime values`},
		{"reserved", []string{"--config", "thread_id=t"}, exitUsage, "reserved: give the thread with --thread"},
		{"wrong type", []string{"--config", "shout=yes"}, exitFailed, `config.shout: the run's config gives a string ("yes"); the file declares a boolean (default false)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := newCLI(t).run(append([]string{"run", path, "--input", "ada"}, tc.flags...)...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stderr, tc.want)
		})
	}
}

// TestTheCommandThatAnswersARunGivesItsConfigAgain: a resumed run has the
// config of its own command, so the command printed to answer a question
// repeats --config.
func TestTheCommandThatAnswersARunGivesItsConfigAgain(t *testing.T) {
	code, stdout, stderr := newCLI(t).run("run", "../../examples/research", "--input", "How fast is SQLite?", "--config", "user=ada lovelace")
	require.Equal(t, exitInterrupted, code, stderr)
	assert.Contains(t, stdout, "--resume '<answer>'")
	assert.Contains(t, stdout, "--config 'user=ada lovelace'")
}
