//go:build !unix

package mcp

import "os/exec"

// setProcessGroup does nothing where process groups are not available.
func setProcessGroup(*exec.Cmd) {}

// signalProcessGroup kills the command's process only: children it started
// may survive on systems without process groups.
func signalProcessGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process != nil && kill {
		_ = cmd.Process.Kill()
	}
}
