package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReplayShowsThePlannerTheAgentsTheRunSaw: the registry holds an
// agent that the recorded run's planner was shown but did not use; the
// replay shows the planner the same list (the recording's), not the
// replay's fresh registry, and does not diverge.
func TestReplayShowsThePlannerTheAgentsTheRunSaw(t *testing.T) {
	c := newCLI(t)
	code, _, stderr := c.run("run", "coor", "--demo", "--thread", "veg", "--input", "Plan a week of vegetarian dinners")
	require.Equal(t, exitInterrupted, code, stderr)
	code, _, stderr = c.run("run", "coor", "--demo", "--thread", "veg", "--resume", "accept")
	require.Equal(t, exitOK, code, stderr)
	code, stdout, stderr := c.run("agents", "list")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "week_vegetarian_researcher", "the registry holds an agent examples/coor does not use")

	id := recordCoor(t, c)
	replayNoDivergence(t, c, id)
}

// TestReplayOfASecondTurnStartsFromTheThreadBeforeIt: the second turn of
// a conversation starts from the thread's checkpoint before its input
// (the first turn's messages), and its replay does too.
func TestReplayOfASecondTurnStartsFromTheThreadBeforeIt(t *testing.T) {
	c := newCLI(t)
	research := "../../examples/research"
	code, _, stderr := c.run("run", research, "--thread", "conv", "--input", "How fast is SQLite?")
	require.Equal(t, exitInterrupted, code, stderr)
	code, _, stderr = c.run("run", research, "--thread", "conv", "--resume", "Y")
	require.Equal(t, exitOK, code, stderr)
	code, _, stderr = c.run("run", research, "--thread", "conv", "--input", "And on a Raspberry Pi?")
	require.Equal(t, exitInterrupted, code, stderr)
	list := c.listRuns("--thread", "conv")
	require.Len(t, list, 3)
	replayNoDivergence(t, c, list[0].ID)
}
