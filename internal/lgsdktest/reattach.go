package lgsdktest

import (
	"encoding/json"
	"testing"
)

// ReattachEnv is what reattach.mjs is given: the URL of a proxy in front
// of the replicas, the token, and a workflow of three model calls.
type ReattachEnv struct {
	URL, Token, Chain string
}

// ReattachReport is reattach.mjs's report: the steps it passed, the run
// it streamed and the number of its events, and the same of the stateless
// run it streamed.
type ReattachReport struct {
	Steps     []string      `json:"steps"`
	ThreadID  string        `json:"threadId"`
	RunID     string        `json:"runId"`
	Events    int           `json:"events"`
	Stateless ReattachedRun `json:"stateless"`
}

// ReattachedRun is a run reattach.mjs streamed.
type ReattachedRun struct {
	ThreadID string `json:"threadId"`
	RunID    string `json:"runId"`
	Events   int    `json:"events"`
}

// RunReattach runs reattach.mjs with sdk and calls kill when the scenario
// asks for the replica its streams read from to be killed; it returns the
// report.
func RunReattach(t testing.TB, sdk SDK, env ReattachEnv, kill func()) ReattachReport {
	t.Helper()
	last := runKillable(t, sdk, "reattach.mjs", kill, "LG_URL="+env.URL, "LG_KEY="+env.Token, "LG_CHAIN="+env.Chain)
	var rep ReattachReport
	if err := json.Unmarshal(last, &rep); err != nil {
		t.Fatalf("lgsdktest: the scenario's report: %v\n%s", err, last)
	}
	return rep
}
