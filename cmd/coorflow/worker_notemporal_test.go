//go:build !temporal

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestABuildWithoutTemporalSaysHowToGetOne(t *testing.T) {
	c := newCLI(t)
	code, _, stderr := c.run("worker", "../../examples/coor")
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "coorflow: worker: "+withoutTemporal+"\n", stderr)

	code, _, stderr = c.run("run", "../../examples/coor", "--temporal", "127.0.0.1:7233", "--input", "x")
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "coorflow: run --temporal: "+withoutTemporal+"\n", stderr)

	c.env["COORFLOW_TOKENS"] = "secret=alice"
	code, _, stderr = c.run("serve", "../../examples/research", "--demo", "--temporal", "127.0.0.1:7233")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "coorflow: serve --temporal: "+withoutTemporal+"\n")
}
