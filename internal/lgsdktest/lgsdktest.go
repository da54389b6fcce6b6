// Package lgsdktest runs the official LangGraph Platform SDK for
// JavaScript (@langchain/langgraph-sdk, at each version of SDKs: pinned in
// npm/package.json and npm2/package.json and installed by `npm ci` there —
// .ci/run does it) against a coorflow server: scenario.mjs is the
// scenario (with the graph of examples/langgraph-scenario among its
// assistants), replicas.mjs the one across two replicas on one database
// (one of them killed mid-run), reattach.mjs the SDK's own re-attachment
// after a kill; the Go tests of cmd/coorflow start `coorflow serve` and
// check their reports, each with every SDK; protocol.mjs,
// stateless.mjs, assistants.mjs and many.mjs are run by the server's tests
// (RunScript) with each pinned SDK, on one server and through replicas.
//
// A test that needs the SDK skips, saying why, only when node or the
// installed package is absent; under CI=true that is a failure. The
// Python SDK (langgraph-sdk on PyPI) is not tested: PyPI is not
// reachable from where the tests are made.
package lgsdktest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// NodeModulesEnv names a node_modules directory to use instead of
// npm/node_modules (CI keeps one per lockfile hash).
const NodeModulesEnv = "COORFLOW_LGSDK_NODE_MODULES"

// SDKPackage is the npm package of the SDK.
const SDKPackage = "@langchain/langgraph-sdk"

// unavailable skips t, or fails it when CI=true.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("lgsdktest: %s (CI=true: the SDK must be installed; see .ci/run)", msg)
	}
	t.Skipf("lgsdktest: %s", msg)
}

// Dir returns the directory of this package (the scenario) .
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Env is what the scenario is given: the server, a token, the assistant
// that stops for a review of its plan and the one whose model never
// answers.
type Env struct {
	URL, Token, Coor, Slow string
	// Configured, when set, is a workflow that answers its config's
	// greeting and the input "name" (shouted when config.shout): the
	// scenario passes config.configurable and reads it back.
	Configured string
	// Example, when set, is the graph of examples/langgraph-scenario:
	// the scenario drives the graph contract of LangGraph's client
	// scenario through it (see scenario.mjs).
	Example string
}

// Report is what the scenario saw.
type Report struct {
	Steps           []string       `json:"steps"`
	Assistants      []string       `json:"assistants"`
	GraphNodes      []string       `json:"graphNodes"`
	FirstStream     map[string]int `json:"firstStream"`
	SecondStream    map[string]int `json:"secondStream"`
	AgentPaths      []string       `json:"agentPaths"`
	HistoryLength   int            `json:"historyLength"`
	RejoinedFirstID int64          `json:"rejoinedFirstId"`
	Multitask       []string       `json:"multitask"`
	// Configured is the answer of the run given a config (Env.Configured).
	Configured string `json:"configured"`
	// Example is what the scenario saw of Env.Example.
	Example ExampleReport `json:"example"`
}

// ExampleReport is what the scenario saw of examples/langgraph-scenario.
type ExampleReport struct {
	// Custom are the custom events of the run to the interrupt and of
	// the resumed run, in order.
	Custom []map[string]any `json:"custom"`
	// Tokens are the chunks of the model call streamed in mode
	// messages-tuple; TokenNode is the node their metadata names.
	Tokens    []string `json:"tokens"`
	TokenNode string   `json:"tokenNode"`
	// Payload is the interrupt's value.
	Payload  map[string]any   `json:"payload"`
	Final    string           `json:"final"`
	Messages []map[string]any `json:"messages"`
	// Edited are the messages after a client's update of one by id.
	Edited           []map[string]any `json:"edited"`
	BeforeCancel     string           `json:"beforeCancel"`
	AfterCancel      string           `json:"afterCancel"`
	DraftAfterCancel any              `json:"draftAfterCancel"`
}

// Run runs scenario.mjs with sdk against env and returns its report; a
// failed check of the scenario fails t with the SDK's output.
func Run(t testing.TB, sdk SDK, env Env) Report {
	t.Helper()
	var rep Report
	RunScript(t, sdk, "scenario.mjs", map[string]string{"LG_URL": env.URL, "LG_KEY": env.Token, "LG_COOR": env.Coor, "LG_SLOW": env.Slow,
		"LG_CONFIGURED": env.Configured, "LG_EXAMPLE": env.Example}, &rep)
	return rep
}

// ReplicasEnv is what replicas.mjs is given: two replicas of one server
// (A, which the scenario asks to kill, and B), a token, a workflow of
// three model calls and one whose model never answers.
type ReplicasEnv struct {
	A, B, Token, Chain, Stuck string
}

// ReplicasReport is what replicas.mjs saw.
type ReplicasReport struct {
	Steps       []string `json:"steps"`
	Multitask   []string `json:"multitask"`
	StreamError string   `json:"streamError"`
	Victim      struct {
		ThreadID    string `json:"threadId"`
		RunID       string `json:"runId"`
		Before      int    `json:"before"`
		After       int    `json:"after"`
		LastEventID string `json:"lastEventId"`
	} `json:"victim"`
}

// RunReplicas runs replicas.mjs with sdk against env. When the scenario
// asks for replica A to be killed, it calls kill, then lets the scenario
// go on.
func RunReplicas(t testing.TB, sdk SDK, env ReplicasEnv, kill func()) ReplicasReport {
	t.Helper()
	last := runKillable(t, sdk, "replicas.mjs", kill, "LG_A="+env.A, "LG_B="+env.B, "LG_KEY="+env.Token, "LG_CHAIN="+env.Chain, "LG_STUCK="+env.Stuck)
	var rep ReplicasReport
	if err := json.Unmarshal(last, &rep); err != nil {
		t.Fatalf("lgsdktest: the scenario's report: %v\n%s", err, last)
	}
	return rep
}

// runKillable runs the node scenario script with sdk and env, calls kill
// when the script prints {"kill":true} (then tells it "killed"), and
// returns the last line it printed: its report.
func runKillable(t testing.TB, sdk SDK, script string, kill func(), env ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join(Dir(), script), NodeModulesOf(t, sdk))
	cmd.Env = append(os.Environ(), append(env, "LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")...)
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
		t.Fatalf("lgsdktest: %s with SDK %s failed: %v\n%s%s", script, sdk.Version, err, stderr.String(), out.String())
	}
	return last
}
