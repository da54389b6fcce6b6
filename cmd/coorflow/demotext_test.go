package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheReactiveDemoReportQuotesEachStepOnceAndNamesFollowUpAgentsForTheirTopic:
// the step that builds on others says what it was asked (not "Asked: -
// Asked:" from the result it builds on), and a follow-up's agents are
// named for its topic, not for "Now add".
func TestTheReactiveDemoReportQuotesEachStepOnceAndNamesFollowUpAgentsForTheirTopic(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", "Compare Redis and Memcached for a session cache")
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stdout, "Asked: - Asked:")
	assert.Contains(t, stdout, "\n  - Asked: From the facts of s1 and the weighing of s2, answer the request \"Compare Redis and Memcached for a session cache\" in a few sentences.\n")
	id := threadOf(t, stdout)

	code, stdout, stderr = c.run("run", "../../examples/coor", "--thread", id, "--input", "Now add a section on the cost of running each")
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stdout, "now_add")
	assert.Contains(t, stdout, "new agent cost_running_researcher — Researcher of Now add a section on the cost of running each\n")
	assert.Contains(t, stdout, "new agent cost_running_analyst — Analyst of Now add a section on the cost of running each\n")
}

// TestTheMemoryDemoSaysItRecalledOnlyWhenItDid: the memory example's
// second request on a fresh database has nothing to recall, researches,
// and its report does not claim that no research was run; after the
// first request it recalls and says so.
func TestTheMemoryDemoSaysItRecalledOnlyWhenItDid(t *testing.T) {
	const second = "Our macOS build loses data after a power loss: which call should it use?"
	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/memory", "--input", second)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "✓ s1 durability_researcher", "research ran")
	assert.NotContains(t, stdout, "no new research was run")
	assert.NotContains(t, stdout, "Recalled from an earlier conversation")

	c = newCLI(t)
	code, _, stderr = c.run("run", "../../examples/memory", "--input", "How do I make a write durable on macOS?")
	require.Equal(t, exitOK, code, stderr)
	code, stdout, stderr = c.run("run", "../../examples/memory", "--input", second)
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stdout, "durability_researcher", "no research")
	assert.Contains(t, stdout, "*Recalled from an earlier conversation: no new research was run.*")
}
