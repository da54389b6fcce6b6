package mcp

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running: a
// closed toolset must have ended its sessions, their readers and the
// waits on their processes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
