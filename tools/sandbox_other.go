//go:build !linux

package tools

// sandboxed refuses: the sandbox is bubblewrap, which needs Linux.
func (p *pythonTool) sandboxed(string) (codeRun, error) {
	return nil, &SandboxError{Tool: "python", Reason: "the sandbox (bubblewrap) needs Linux; on this system code can only run with the sandbox off"}
}
