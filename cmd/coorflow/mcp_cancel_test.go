package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/mcptest"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// holdingModel is an OpenAI-wire model server that holds its first
// request until the client gives up on it, saying so on held and then on
// dropped, and passes the others to a model that answers "again".
func holdingModel(t *testing.T) (base string, held, dropped <-chan struct{}) {
	t.Helper()
	answers := openaitest.NewServer(openaitest.Text("again"))
	t.Cleanup(answers.Close)
	u, err := url.Parse(answers.URL())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	h, d := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first := false
		once.Do(func() { first = true })
		if !first {
			proxy.ServeHTTP(w, r)
			return
		}
		// Read the body first: only then does the server notice the
		// client closing the connection.
		_, _ = io.Copy(io.Discard, r.Body)
		close(h)
		<-r.Context().Done()
		close(d)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/v1", h, d
}

// TestCoorflowMCPOverStdioSendsNoResponseToACallTheClientAborted (issue
// 28, finding 7): the TypeScript SDK starts `coorflow mcp` and aborts a
// running call with an AbortSignal (it sends notifications/cancelled);
// the workflow's model call is cancelled, no response for that id reaches
// the client's transport, and the next call is answered.
func TestCoorflowMCPOverStdioSendsNoResponseToACallTheClientAborted(t *testing.T) {
	mcptest.NodeModules(t) // skip before building when the SDK is absent
	bin := buildCoorflow(t)
	base, held, dropped := holdingModel(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "slow.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`apiVersion: coorflow/v1
name: slow
description: Answers slowly.
input: question
output: answer
models:
  basic: {provider: openai, model: gpt-4o, base_url: %q}
state:
  question: {type: string}
  answer: {type: string}
nodes:
  a: {type: llm, prompt: "{{ state.question }}", output: answer}
edges:
  - {from: start, to: a}
  - {from: a, to: end}
`, base)), 0o600))

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	cancelled := make(chan bool, 1)
	go func() {
		defer w.Close()
		<-held // the call runs: its model call is held
		fmt.Fprintln(w, "abort")
		<-dropped // coorflow gave up the model call: the run's context is cancelled
		cancelled <- true
		fmt.Fprintln(w, "go on")
	}()
	rep := mcptest.RunClient(t, mcptest.ClientPlan{
		Stdio: []string{bin, "mcp", file, "--db", filepath.Join(dir, "coorflow.db")},
		// A key, so that the file's model is used (not sent to its
		// endpoint, which the operator did not allow).
		Env:   map[string]string{"OPENAI_API_KEY": "sk-test"},
		Stdin: r,
		Calls: []mcptest.Call{
			{Name: "slow", Arguments: map[string]any{"question": "take your time"}, Abort: true},
			{Name: "slow", Arguments: map[string]any{"question": "once more"}},
		},
	})
	select {
	case <-cancelled:
	default:
		t.Fatalf("the model call was not cancelled: %+v", rep)
	}
	require.Empty(t, rep.Error, rep.Stderr)
	require.Len(t, rep.Aborted, 1)
	assert.Contains(t, rep.Aborted[0], "the user cancelled")
	var calls []any
	var cancel any
	for _, m := range rep.Sent {
		switch m.Method {
		case "tools/call":
			calls = append(calls, m.ID)
		case "notifications/cancelled":
			cancel = m.RequestID
		}
	}
	require.Len(t, calls, 2)
	assert.Equal(t, calls[0], cancel, "the SDK sent notifications/cancelled for the aborted call")
	assert.NotContains(t, rep.Responses, calls[0], "no response to the cancelled call")
	assert.Contains(t, rep.Responses, calls[1], "the next call is answered")
	require.Len(t, rep.Results, 1)
	assert.False(t, rep.Results[0].IsError, rep.Results[0].Content)
	assert.Equal(t, "again", rep.Results[0].Content[0].Text)
}
