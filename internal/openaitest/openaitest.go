// Package openaitest runs the official OpenAI client for JavaScript
// (openai on npm, at the version pinned in npm/package.json and installed
// by `npm ci` in npm/ — .ci/run does it) against coorflow's
// OpenAI-compatible endpoint: chat.mjs is the scenario, and the Go tests
// of package server check its report.
//
// A test that needs the client skips, saying why, only when node or the
// installed package is absent; under CI=true that is a failure. (Package
// llm/openaitest is another thing: a test server that speaks OpenAI's
// protocol to coorflow's models.)
package openaitest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/coorflow/coorflow/internal/npmtest"
)

// NodeModulesEnv names a node_modules directory to use instead of
// npm/node_modules (CI keeps one per lockfile hash).
const NodeModulesEnv = "COORFLOW_OPENAI_NODE_MODULES"

// ClientPackage is the npm package of the client.
const ClientPackage = "openai"

// Dir returns the directory of this package (the scenario).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// NodeModules returns the node_modules directory holding the pinned
// client, or skips t.
func NodeModules(t testing.TB) string {
	t.Helper()
	return pinned.NodeModules(t)
}

// pinned are the package's pinned npm packages.
var pinned = npmtest.Pinned{Name: "openaitest", Env: NodeModulesEnv, Dir: Dir(), Package: ClientPackage}

// Env is what the scenario is given: the endpoint's base URL (ending in
// /openai/v1), a token, the model (a workflow), a question it asks twice
// (at once and streamed), and the two messages of a conversation (Other,
// then FollowUp, streamed). BrokeToken, when set, is the token of an
// owner whose budget stops its run: the scenario asks it the question.
type Env struct {
	URL, Token, Model, Question, Other, FollowUp string
	BrokeToken                                   string
}

// Usage is a completion's usage as the client got it.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Failure is an error the client threw: its class and fields.
type Failure struct {
	Class   string  `json:"class"`
	Status  int     `json:"status"`
	Type    *string `json:"type"`
	Code    *string `json:"code"`
	Param   *string `json:"param"`
	Message string  `json:"message"`
}

// Report is what the scenario saw.
type Report struct {
	Steps  []string `json:"steps"`
	Models []string `json:"models"`
	// Answer, Usage and AnswerThread are those of the completion not
	// streamed; Streamed, StreamChunks (the chunks with content),
	// StreamUsage and StreamThread those of the streamed one, on the same
	// question; FirstAnswer and SecondAnswer (streamed) are those of the
	// conversation's two messages, and ConversationThreads the threads
	// they ran on.
	Answer              string             `json:"answer"`
	Usage               Usage              `json:"usage"`
	AnswerThread        string             `json:"answerThread"`
	Streamed            string             `json:"streamed"`
	StreamChunks        int                `json:"streamChunks"`
	StreamUsage         *Usage             `json:"streamUsage"`
	StreamThread        string             `json:"streamThread"`
	FirstAnswer         string             `json:"firstAnswer"`
	SecondAnswer        string             `json:"secondAnswer"`
	ConversationThreads []string           `json:"conversationThreads"`
	Errors              map[string]Failure `json:"errors"`
}

// Run runs chat.mjs against env and returns its report; a failed check of
// the scenario fails t with the client's output.
func Run(t testing.TB, env Env) Report {
	t.Helper()
	modules := NodeModules(t)
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join(Dir(), "chat.mjs"), modules)
	cmd.Env = append(os.Environ(), "OAI_URL="+env.URL, "OAI_KEY="+env.Token, "OAI_MODEL="+env.Model,
		"OAI_BROKE_KEY="+env.BrokeToken, "OAI_QUESTION="+env.Question, "OAI_OTHER="+env.Other, "OAI_FOLLOW_UP="+env.FollowUp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("openaitest: the scenario failed: %v\n%s%s", err, stderr.String(), stdout.String())
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("openaitest: the scenario's report: %v\n%s", err, stdout.String())
	}
	return rep
}
