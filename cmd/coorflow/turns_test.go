package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestANewInputOnAFinishedThreadStartsATurn continues a research thread
// with a second input: the planner plans again (its rounds count per
// turn), and threads show lists both turns, the second one waiting for its
// review.
func TestANewInputOnAFinishedThreadStartsATurn(t *testing.T) {
	c := newCLI(t)
	research := "../../examples/research"
	code, _, stderr := c.run("run", research, "--thread", "conv", "--input", "How fast is SQLite?")
	require.Equal(t, exitInterrupted, code, stderr)
	code, out, stderr := c.run("threads", "show", "conv")
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `turns       1\n  1   waiting for an answer r-[0-9a-f]{8}  How fast is SQLite\?\n`, out)

	// A new input while the turn waits for its review is refused, and the
	// thread keeps its question.
	code, _, stderr = c.run("run", research, "--thread", "conv", "--input", "And on a Raspberry Pi?")
	require.Equal(t, exitUsage, code)
	assert.Equal(t, "coorflow: thread conv is waiting for an answer, so --input cannot start a new turn yet: answer with coorflow run ../../examples/research --thread conv --resume '<answer>' (or start another thread)\n", stderr)
	code, out, _ = c.run("threads", "show", "conv")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "status      waiting for an answer\n")

	code, _, stderr = c.run("run", research, "--thread", "conv", "--resume", "Y")
	require.Equal(t, exitOK, code, stderr)
	code, out, stderr = c.run("run", research, "--thread", "conv", "--input", "And on a Raspberry Pi?")
	require.Equal(t, exitInterrupted, code, stderr)
	assert.Contains(t, out, "✓ coordinator  turn 2; handed off:")
	assert.Contains(t, out, `✓ planner  plan "Checkpoints per second with SQLite in WAL mode": 2 steps`, "turn 2 plans anew")

	code, out, stderr = c.run("threads", "show", "conv", "--json")
	require.Equal(t, exitOK, code, stderr)
	var v threadView
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Len(t, v.Turns, 2)
	assert.Equal(t, turnRow{N: 1, Status: "done", Run: v.Turns[0].Run, Input: "How fast is SQLite?",
		Answer: "Checkpoints per second with SQLite in WAL mode **Answer:** about **1,000 checkpoints per second** when every commit is synced (`synchronous=FULL`), and about **50,000** with `synchronous=NORMAL`, which survives a crash of the process but n…"}, v.Turns[0])
	assert.Equal(t, "waiting for an answer", v.Turns[1].Status)
	assert.Equal(t, "And on a Raspberry Pi?", v.Turns[1].Input)
	assert.NotEqual(t, v.Turns[0].Run, v.Turns[1].Run, "each turn names the run that began it")
}
