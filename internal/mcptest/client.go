package mcptest

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Call is one tool call a client makes.
type Call struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
	// Abort makes the call with an AbortSignal and aborts it (the SDK
	// sends notifications/cancelled) when a line arrives on the client's
	// stdin (ClientPlan.Stdin); the next calls wait for one more line.
	// The call has no entry in Results: its error is in Aborted.
	Abort bool `json:"abort,omitempty"`
}

// ClientPlan is what RunClient's client does: connect over stdio (Stdio,
// the command and its arguments, with Env as its environment) or
// streamable HTTP (URL, with Token as bearer), list the tools, and make
// the calls in order. With Elicit set, the client can answer questions
// and answers each with it. Headers are sent with every HTTP request
// besides the bearer (Origin, as a browser page would send it).
type ClientPlan struct {
	Stdio   []string          `json:"stdio,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Token   string            `json:"token,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Calls   []Call            `json:"calls"`
	Elicit  map[string]any    `json:"elicit,omitempty"`
	// Stdin is the client's standard input, for calls with Abort; the
	// client ends once it is closed.
	Stdin io.Reader `json:"-"`
}

// ClientReport is what the client saw, as the TypeScript SDK decoded it.
type ClientReport struct {
	Tools []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"inputSchema"`
	} `json:"tools"`
	// Results are the calls' results; Progress the progress notifications
	// of each call.
	Results []struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	} `json:"results"`
	Progress     [][]map[string]any `json:"progress"`
	Elicitations []map[string]any   `json:"elicitations"`
	// ProtocolVersion is the protocol version negotiated over HTTP.
	ProtocolVersion string `json:"protocolVersion"`
	// Sent are the messages the client sent, as its transport saw them
	// (RequestID is a cancel's); Responses the ids of the responses its
	// transport received, those the SDK drops included; Aborted what the
	// aborted calls threw.
	Sent []struct {
		ID        any    `json:"id"`
		Method    string `json:"method"`
		RequestID any    `json:"requestId"`
	} `json:"sent"`
	Responses []any    `json:"responses"`
	Aborted   []string `json:"aborted"`
	// Error is what the client threw, if anything; Stderr what a stdio
	// server wrote to its stderr.
	Error  string `json:"error"`
	Stderr string `json:"stderr"`
}

// RunClient runs the official TypeScript SDK as a client (client.mjs) with
// plan and returns its report; it skips t when node or the SDK is absent.
func RunClient(t testing.TB, plan ClientPlan) ClientReport {
	t.Helper()
	node := Node(t)
	modules := NodeModules(t)
	raw, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.CommandContext(t.Context(), node, filepath.Join(filepath.Dir(file), "client.mjs"), modules)
	cmd.Env = append(os.Environ(), "MCPTEST_PLAN="+string(raw))
	cmd.Stdin = plan.Stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcptest: the TypeScript client failed: %v\n%s%s", err, stderr.String(), stdout.String())
	}
	var rep ClientReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("mcptest: the TypeScript client's report: %v\n%s", err, stdout.String())
	}
	return rep
}
