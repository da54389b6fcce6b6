// Package a2atest runs the official A2A SDK for JavaScript (@a2a-js/sdk,
// at the version pinned in npm/package.json and installed by `npm ci` in
// npm/ — .ci/run does it) against coorflow: client.mjs drives coorflow's
// A2A server as a client; agent.mjs serves an A2A agent built with the
// SDK's server for coorflow's client to call.
//
// A test that needs the SDK skips, saying why, only when node or the
// installed package is absent; under CI=true that is a failure.
package a2atest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/coorflow/coorflow/internal/npmtest"
)

// NodeModulesEnv names a node_modules directory to use instead of
// npm/node_modules (CI keeps one per lockfile hash).
const NodeModulesEnv = "COORFLOW_A2A_NODE_MODULES"

// SDKPackage is the npm package of the SDK.
const SDKPackage = "@a2a-js/sdk"

// Dir returns the directory of this package (its scripts).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// NodeModules returns the node_modules directory holding the pinned SDK,
// or skips t.
func NodeModules(t testing.TB) string {
	t.Helper()
	return pinned.NodeModules(t)
}

// pinned are the package's pinned npm packages.
var pinned = npmtest.Pinned{Name: "a2atest", Env: NodeModulesEnv, Dir: Dir(), Package: SDKPackage}

// ClientEnv is what client.mjs is given.
type ClientEnv struct {
	URL, Key, OtherKey string
	// Echo answers at once, Ask asks one question first, Block runs until
	// cancelled.
	Echo, Ask, Block string
	// Binding is the protocol binding the client speaks: "JSONRPC" (when
	// empty) or "HTTP+JSON" (REST).
	Binding string
}

// Failure is an error the SDK threw: its class name and message.
type Failure struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// TaskReport is what the SDK saw of a task.
type TaskReport struct {
	Kind      string `json:"kind"`
	State     string `json:"state"`
	Answer    string `json:"answer"`
	Question  string `json:"question"`
	ContextID string `json:"contextId"`
	TaskID    string `json:"taskId"`
	History   int    `json:"history"`
	SameTask  bool   `json:"sameTask"`
}

// ClientReport is what client.mjs saw.
type ClientReport struct {
	// Binding is the binding the SDK's client chose.
	Binding    string   `json:"binding"`
	CardSkills []string `json:"cardSkills"`
	EchoCard   struct {
		Name   string   `json:"name"`
		Skills []string `json:"skills"`
	} `json:"echoCard"`
	Send   TaskReport `json:"send"`
	Stream struct {
		Events    []string `json:"events"`
		TaskID    string   `json:"taskId"`
		ContextID string   `json:"contextId"`
		Final     string   `json:"final"`
		Answer    string   `json:"answer"`
	} `json:"stream"`
	Get         TaskReport `json:"get"`
	List        []string   `json:"list"`
	Ask         TaskReport `json:"ask"`
	Answer      TaskReport `json:"answer"`
	AnswerAgain Failure    `json:"answerAgain"`
	Started     string     `json:"started"`
	Cancel      struct {
		State      string `json:"state"`
		Afterwards string `json:"afterwards"`
	} `json:"cancel"`
	CancelAgain Failure `json:"cancelAgain"`
	UnknownTask Failure `json:"unknownTask"`
	OtherGet    Failure `json:"otherGet"`
	OtherCancel Failure `json:"otherCancel"`
	OtherAnswer Failure `json:"otherAnswer"`
	OtherList   int     `json:"otherList"`
}

// RunClient runs client.mjs against env and returns its report.
func RunClient(t testing.TB, env ClientEnv) ClientReport {
	t.Helper()
	modules := NodeModules(t)
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join(Dir(), "client.mjs"), modules)
	cmd.Env = append(os.Environ(), "A2A_URL="+env.URL, "A2A_KEY="+env.Key, "A2A_OTHER_KEY="+env.OtherKey,
		"A2A_ECHO="+env.Echo, "A2A_ASK="+env.Ask, "A2A_BLOCK="+env.Block, "A2A_BINDING="+cmpOr(env.Binding, "JSONRPC"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("a2atest: the client scenario failed: %v\n%s%s", err, stderr.String(), stdout.String())
	}
	if stderr.Len() > 0 {
		t.Logf("a2atest: the client scenario's stderr:\n%s", stderr.String())
	}
	var rep ClientReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("a2atest: the client scenario's report: %v\n%s", err, stdout.String())
	}
	return rep
}

// Agent is an A2A agent served by the SDK (agent.mjs).
type Agent struct {
	// URL is the agent's base URL (its card is under it); URL+"/slow/"
	// is the agent that does not stream and whose tasks wait for Release.
	URL string
	// Lines receives what the agent reports, a line each: "message
	// <text>", "subscribed <task id>".
	Lines <-chan string
	cmd   *exec.Cmd
	out   *bufio.Reader
}

// StartAgent starts agent.mjs, an agent built with the SDK's server: it
// answers a message with "echo: <text>", streaming a working status
// first, and counts the messages it was sent (Agent.Count). It stops
// when t ends.
func StartAgent(t testing.TB) *Agent {
	t.Helper()
	modules := NodeModules(t)
	cmd := exec.Command("node", filepath.Join(Dir(), "agent.mjs"), modules)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("a2atest: start the agent: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	a := &Agent{cmd: cmd, out: bufio.NewReader(stdout)}
	line, err := a.out.ReadString('\n')
	if err != nil {
		t.Fatalf("a2atest: the agent did not say where it listens: %v", err)
	}
	a.URL = strings.TrimSpace(line)
	lines := make(chan string, 64)
	a.Lines = lines
	go func() {
		defer close(lines)
		for {
			l, err := a.out.ReadString('\n')
			if err != nil {
				return
			}
			select {
			case lines <- strings.TrimSpace(l):
			default: // nobody reads them
			}
		}
	}()
	return a
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
