package lgsdktest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ReattachEnv is what reattach.mjs is given: the URL of a proxy in front
// of the replicas, the token, and a workflow of three model calls.
type ReattachEnv struct {
	URL, Token, Chain string
}

// ReattachReport is reattach.mjs's report: the steps it passed, the run
// it streamed and the number of its events.
type ReattachReport struct {
	Steps    []string `json:"steps"`
	ThreadID string   `json:"threadId"`
	RunID    string   `json:"runId"`
	Events   int      `json:"events"`
}

// RunReattach runs reattach.mjs and calls kill when the scenario asks for
// the replica its streams read from to be killed; it returns the report.
func RunReattach(t testing.TB, env ReattachEnv, kill func()) ReattachReport {
	t.Helper()
	modules := NodeModules(t)
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join(Dir(), "reattach.mjs"), modules)
	cmd.Env = append(os.Environ(), "LG_URL="+env.URL, "LG_KEY="+env.Token, "LG_CHAIN="+env.Chain,
		"LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("lgsdktest: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("lgsdktest: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("lgsdktest: start the scenario: %v", err)
	}
	var last []byte
	var out bytes.Buffer
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for lines.Scan() {
		line := lines.Bytes()
		out.Write(line)
		out.WriteByte('\n')
		if string(line) == `{"kill":true}` {
			kill()
			_, _ = io.WriteString(stdin, "killed\n")
			continue
		}
		last = append(last[:0], line...)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lgsdktest: the scenario failed: %v\n%s%s", err, stderr.String(), out.String())
	}
	var rep ReattachReport
	if err := json.Unmarshal(last, &rep); err != nil {
		t.Fatalf("lgsdktest: the scenario's report: %v\n%s", err, out.String())
	}
	return rep
}
