package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheSkillsExampleRunsFromTheCommandLine(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("validate", "../../examples/skills")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "ok  ../../examples/skills  (skills: 5 nodes)\n", stdout)

	code, stdout, stderr = c.run("run", "../../examples/skills", "--input", "Write the release notes of coorflow 0.3")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "+ release_writer  built: tier basic, tools none, skills release-notes")
	assert.Contains(t, stdout, "open_skill")
	assert.Contains(t, stdout, "read_skill_file")
	assert.Contains(t, stdout, "## Upgrade notes\nNothing to do.")

	code, stdout, stderr = c.run("agents", "show", "release_writer")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "skills       release-notes\n")
}
