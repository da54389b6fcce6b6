package workflows_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/workflows"
)

// TestCoorServedOverHTTPKeepsEachOwnersAgentsApart serves the coor
// workflow to two owners: each run builds the new agent for its owner and
// reads its results back from its owner's board.
func TestCoorServedOverHTTPKeepsEachOwnersAgentsApart(t *testing.T) {
	plan := map[string]any{
		"title": "Engines", "thought": "t", "locale": "en-US", "has_enough_context": false,
		"new_agents_needed": []any{map[string]any{"name": "perf_analyst", "role": "r", "capabilities": "c", "contribution": "c"}},
		"steps": []any{map[string]any{"id": "s1", "agent_name": "perf_analyst", "title": "Measure", "description": "Measure.",
			"step_type": "processing", "need_search": false, "depends_on": []string{}}},
	}
	build := reply(t, map[string]any{"thought": "t", "description": "Measures.", "tier": "basic", "tools": []string{}, "brief": "Measure things."})
	meta := scripted.Reply{Text: "You measure the performance of software.\n\n# Steps\n1. Reason first.\n\n# Output Format\nReasoning, then numbers.\n\n# Notes\n- Be exact."}
	// Every owner's run makes the same calls: rules answer by agent.
	model := scripted.New(scripted.Script{Rules: []scripted.Rule{
		{Agent: "coordinator", Reply: handoff()},
		{Agent: "planner", Reply: reply(t, plan)},
		{Agent: "builder:perf_analyst", Reply: build},
		{Agent: "metaprompt:perf_analyst", Reply: meta},
		{Agent: "perf_analyst", Reply: stepAnswer(t, "FAST")},
		{Agent: "reporter", Reply: scripted.Reply{Text: "# Report"}},
	}})
	st := smem.New(store.Config{})
	coor, err := workflows.Coor(t.Context(), workflows.Env{Models: models(t, model), Store: st, Owner: "default", Getenv: env(nil),
		AutoAccept: true})
	require.NoError(t, err)
	srv, err := server.New(server.Config{Workflows: map[string]*graph.Runnable{"coor": coor}, Saver: memory.New(),
		Tokens: map[string]string{"ta": "alice", "tb": "bob"}})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer func() { require.NoError(t, srv.Shutdown(t.Context())) }()

	call := func(token, method, path string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(t.Context(), method, hs.URL+path, bytes.NewReader(b))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		require.Less(t, resp.StatusCode, 300, string(data))
		var out map[string]any
		require.NoError(t, json.Unmarshal(data, &out))
		return out
	}
	for _, token := range []string{"ta", "tb"} {
		call(token, "POST", "/v1/threads", map[string]any{"workflow": "coor", "thread_id": "web-1"})
		run := call(token, "POST", "/v1/threads/web-1/runs/wait", map[string]any{"input": map[string]any{"input": "Compare engines"}})
		require.Equal(t, "done", run["status"], run)
		assert.Equal(t, "# Report\n\n## References\n[1] https://example.org/FAST", run["values"].(map[string]any)["answer"])
	}
	for _, owner := range []string{"alice", "bob"} {
		_, err := factory.NewRegistry(st, owner).Get(t.Context(), "perf_analyst")
		assert.NoError(t, err, owner)
	}
	_, err = factory.NewRegistry(st, "default").Get(t.Context(), "perf_analyst")
	assert.ErrorIs(t, err, factory.ErrAgentNotFound)
}
