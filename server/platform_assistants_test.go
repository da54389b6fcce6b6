package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/lgsdktest"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	storepg "github.com/coorflow/coorflow/store/postgres"
	storesqlite "github.com/coorflow/coorflow/store/sqlite"
)

// assistantStores are the databases assistants are tested on.
var assistantStores = []string{"sqlite", "postgres"}

// assistantStore opens a store of the backend kind, on a schema or file
// of the test's own.
func assistantStore(t *testing.T, kind string) store.Store {
	t.Helper()
	switch kind {
	case "sqlite":
		st, err := storesqlite.Open(t.Context(), filepath.Join(t.TempDir(), "store.db"))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, st.Close()) })
		return st
	case "postgres":
		pool := pgtest.Pool(t)
		return storepg.New(pool, storepg.WithSchema(pgtest.Schema(t, pool, "coorflow_test_store_")))
	}
	t.Fatalf("unknown store %q", kind)
	return nil
}

// assistantsReport is what assistants.mjs saw.
type assistantsReport struct {
	Steps       []string
	Versions    []int
	LatestRun   map[string]any
	FirstRun    map[string]any
	Counted     int
	OtherOwner  []int
	AfterDelete []int
}

func (rep assistantsReport) check(t *testing.T) {
	t.Helper()
	assert.Equal(t, []string{"create", "update", "versions", "run", "latest", "search", "graph", "owners", "if_exists", "delete"}, rep.Steps)
	assert.Equal(t, []int{2, 1}, rep.Versions)
	assert.Equal(t, map[string]any{"model": "large", "prompt": "mine", "tone": "dry"}, rep.LatestRun, "the latest version's config under the run's own")
	assert.Equal(t, map[string]any{"model": "small", "prompt": "be brief", "tone": "dry"}, rep.FirstRun, "version 1, made the latest again")
	assert.Equal(t, 3, rep.Counted)
	assert.Equal(t, []int{404, 404, 404, 404, 404}, rep.OtherOwner)
	assert.Equal(t, []int{404, 404}, rep.AfterDelete)
}

// TestTheLangGraphSDKsManageAssistantsAndRunThem runs assistants.mjs with
// each pinned SDK against a server keeping its assistants in SQLite and
// in PostgreSQL: create, update (a new version), versions, setLatest,
// search and count with filters, graph and schemas, another owner's 404s,
// if_exists, delete, and runs whose nodes get the assistant's config
// under the run's own.
func TestTheLangGraphSDKsManageAssistantsAndRunThem(t *testing.T) {
	for _, sdk := range lgsdktest.SDKs {
		for _, kind := range assistantStores {
			t.Run(sdk.Version+"/"+kind, func(t *testing.T) {
				lgsdktest.NodeModulesOf(t, sdk)
				e := newEnv(t, server.Config{Workflows: workflows(configGraph(t, "cfg", false)), Store: assistantStore(t, kind)})
				var rep assistantsReport
				lgsdktest.RunScript(t, sdk, "assistants.mjs", map[string]string{"LG_URLS": e.hs.URL, "LG_KEY": alice, "LG_OTHER_KEY": bob, "LG_GRAPH": "cfg"}, &rep)
				rep.check(t)
			})
		}
	}
}

// TestTheLangGraphSDKManagesAssistantsThroughThreeReplicas: the same
// scenario with each pinned SDK, each call to the next of three replicas
// sharing a PostgreSQL database and store; runs on an assistant executed
// by whichever replica claims them get the version's config.
func TestTheLangGraphSDKManagesAssistantsThroughThreeReplicas(t *testing.T) {
	for _, sdk := range lgsdktest.SDKs {
		t.Run(sdk.Version, func(t *testing.T) {
			lgsdktest.NodeModulesOf(t, sdk)
			rs := newReplicaSet(t, 3, time.Minute, server.Config{Workflows: workflows(configGraph(t, "cfg", false)), Store: assistantStore(t, "postgres")})
			urls := make([]string, len(rs.envs))
			for i, e := range rs.envs {
				urls[i] = e.hs.URL
			}
			var rep assistantsReport
			lgsdktest.RunScript(t, sdk, "assistants.mjs", map[string]string{"LG_URLS": strings.Join(urls, ","), "LG_KEY": alice, "LG_OTHER_KEY": bob, "LG_GRAPH": "cfg"}, &rep)
			rep.check(t)
		})
	}
}

// createAssistant creates an assistant of graph cfg and returns its id.
func (e *env) createAssistant(token string, body map[string]any) string {
	e.t.Helper()
	if body["graph_id"] == nil {
		body["graph_id"] = "cfg"
	}
	var a map[string]any
	e.call("POST", "/assistants", token, body, http.StatusOK, &a)
	return a["assistant_id"].(string)
}

func TestAnAssistantOutlivesItsServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	serve := func() *env {
		st, err := storesqlite.Open(t.Context(), path)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, st.Close()) })
		return newEnv(t, server.Config{Workflows: workflows(configGraph(t, "cfg", false)), Store: st})
	}
	first := serve()
	id := first.createAssistant(alice, map[string]any{"config": map[string]any{"configurable": map[string]any{"model": "m1"}}})
	first.call("PATCH", "/assistants/"+id, alice, map[string]any{"config": map[string]any{"configurable": map[string]any{"model": "m2"}}}, http.StatusOK, nil)
	require.NoError(t, first.srv.Shutdown(t.Context()))

	second := serve()
	var a map[string]any
	second.call("GET", "/assistants/"+id, alice, nil, http.StatusOK, &a)
	assert.Equal(t, 2.0, a["version"])
	var out map[string]any
	th := second.platformThread(alice, nil)
	second.call("POST", "/threads/"+th+"/runs/wait", alice, map[string]any{"assistant_id": id, "input": map[string]any{"text": "x"}}, http.StatusOK, &out)
	assert.JSONEq(t, `{"model":"m2"}`, out["text"].(string))
}

// TestAssistantErrorsSayWhatIsWrong: each refusal, with its status, code
// and message; none stores anything.
func TestAssistantErrorsSayWhatIsWrong(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(configGraph(t, "cfg", false), echoGraph(t))})
	id := e.createAssistant(alice, map[string]any{"name": "a"})
	th := e.platformThread(alice, nil)
	e.call("POST", "/threads/"+th+"/runs/wait", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "x"}}, http.StatusOK, nil)
	long := strings.Repeat("n", 257)
	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		want               server.ErrorDetail
	}{
		{"no graph", "POST", "/assistants", map[string]any{}, 400, server.ErrorDetail{Code: "invalid_field", Field: "graph_id",
			Message: `field "graph_id" is required: name a workflow of the server (cfg, echo)`}},
		{"unknown graph", "POST", "/assistants", map[string]any{"graph_id": "nope"}, 404, server.ErrorDetail{Code: "unknown_workflow",
			Message: `unknown graph "nope": graph_id names a workflow of the server (cfg, echo)`}},
		{"id not a uuid", "POST", "/assistants", map[string]any{"graph_id": "cfg", "assistant_id": "mine"}, 400, server.ErrorDetail{Code: "invalid_field", Field: "assistant_id",
			Message: `field "assistant_id" must be a UUID, not "mine"`}},
		{"id of a workflow", "POST", "/assistants", map[string]any{"graph_id": "cfg", "assistant_id": "echo"}, 409, server.ErrorDetail{Code: "assistant_exists",
			Message: `assistant "echo" exists: it is the server's workflow of that name`}},
		{"id in use", "POST", "/assistants", map[string]any{"graph_id": "cfg", "assistant_id": id}, 409, server.ErrorDetail{Code: "assistant_exists",
			Message: `assistant "` + id + `" exists (if_exists "do_nothing" answers it instead)`}},
		{"bad if_exists", "POST", "/assistants", map[string]any{"graph_id": "cfg", "if_exists": "replace"}, 400, server.ErrorDetail{Code: "invalid_field", Field: "if_exists",
			Message: `field "if_exists" must be raise or do_nothing, not "replace"`}},
		{"config not an object", "POST", "/assistants", map[string]any{"graph_id": "cfg", "config": []int{1}}, 400, server.ErrorDetail{Code: "invalid_field", Field: "config",
			Message: `field "config" must be a JSON object`}},
		{"reserved key", "POST", "/assistants", map[string]any{"graph_id": "cfg", "config": map[string]any{"configurable": map[string]any{"thread_id": "t"}}}, 400,
			server.ErrorDetail{Code: "invalid_field", Field: "config.configurable",
				Message: `field "config.configurable" of an assistant holds values for the nodes: thread_id, checkpoint_id, checkpoint_ns and run_id belong to a run`}},
		{"host key", "POST", "/assistants", map[string]any{"graph_id": "cfg", "context": map[string]any{"coorflow.owner": "bob"}}, 400,
			server.ErrorDetail{Code: "invalid_field", Field: "context.coorflow.owner",
				Message: `field "context.coorflow.owner": config key "coorflow.owner": keys starting with coorflow. are the host's own runtime values; a caller cannot set them`}},
		{"two values of a key", "POST", "/assistants", map[string]any{"graph_id": "cfg", "config": map[string]any{"configurable": map[string]any{"k": 1}}, "context": map[string]any{"k": 2}}, 400,
			server.ErrorDetail{Code: "invalid_field", Field: "context.k", Message: `field "context.k": config key "k": given twice with different values (1 and 2)`}},
		{"config too large", "POST", "/assistants", map[string]any{"graph_id": "cfg", "context": map[string]any{"blob": strings.Repeat("a", runs.MaxConfigBytes)}}, 400,
			server.ErrorDetail{Code: "invalid_field", Field: "context", Message: fmt.Sprintf(`field "context" has %d bytes of JSON, more than the %d allowed`, runs.MaxConfigBytes+11, runs.MaxConfigBytes)}},
		{"long name", "POST", "/assistants", map[string]any{"graph_id": "cfg", "name": long}, 400, server.ErrorDetail{Code: "invalid_field", Field: "name",
			Message: `field "name" has 257 bytes, more than the 256 allowed`}},
		{"patch a workflow", "PATCH", "/assistants/echo", map[string]any{"name": "x"}, 409, server.ErrorDetail{Code: "system_assistant",
			Message: `assistant "echo" is the workflow of that name and changes only with its file: create an assistant of graph "echo" (POST /assistants) to configure it`}},
		{"delete a workflow", "DELETE", "/assistants/echo", nil, 409, server.ErrorDetail{Code: "system_assistant",
			Message: `assistant "echo" is the workflow of that name and changes only with its file: create an assistant of graph "echo" (POST /assistants) to configure it`}},
		{"patch unknown", "PATCH", "/assistants/6f2c1a4e-0b7d-4c39-9e51-2d8f3a6b7c10", map[string]any{"name": "x"}, 404, server.ErrorDetail{Code: "unknown_workflow",
			Message: `unknown assistant "6f2c1a4e-0b7d-4c39-9e51-2d8f3a6b7c10": each workflow is an assistant, named like it, and POST /assistants creates more (POST /assistants/search lists them)`}},
		{"patch an id", "PATCH", "/assistants/" + id, map[string]any{"assistant_id": "x"}, 400, server.ErrorDetail{Code: "invalid_field", Field: "assistant_id",
			Message: `fields "assistant_id" and "if_exists" belong to a creation (POST /assistants)`}},
		{"latest unknown version", "POST", "/assistants/" + id + "/latest", map[string]any{"version": 7}, 404, server.ErrorDetail{Code: "not_found",
			Message: `assistant "` + id + `" has no version 7 (POST /assistants/` + id + `/versions lists them)`}},
		{"delete_threads", "DELETE", "/assistants/" + id + "?delete_threads=true", nil, 400, server.ErrorDetail{Code: "invalid_query", Field: "delete_threads",
			Message: `query parameter "delete_threads" is not supported: delete the assistant's threads one by one (DELETE /threads/{thread_id})`}},
		{"bad sort", "POST", "/assistants/search", map[string]any{"sort_by": "version"}, 400, server.ErrorDetail{Code: "invalid_field", Field: "sort_by",
			Message: `field "sort_by" must be assistant_id, graph_id, name, created_at or updated_at, not "version"`}},
		{"bad select", "POST", "/assistants/search", map[string]any{"select": []string{"owner"}}, 400, server.ErrorDetail{Code: "invalid_field", Field: "select",
			Message: `field "select" names "owner", not a field of an assistant (assistant_id, graph_id, name, description, config, context, created_at, updated_at, metadata, version)`}},
		{"a thread of another graph", "POST", "/threads/" + th + "/runs/wait", map[string]any{"assistant_id": id, "input": map[string]any{"text": "x"}}, 409,
			server.ErrorDetail{Code: "wrong_workflow", Message: `thread "` + th + `" runs graph "echo", not "cfg" (assistant "` + id + `"'s): create another thread for it`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.fails(c.method, c.path, alice, c.body, c.status, c.want)
		})
	}
	var n int
	e.call("POST", "/assistants/count", alice, map[string]any{"graph_id": "cfg"}, http.StatusOK, &n)
	assert.Equal(t, 2, n, "the workflow's own and the one created")
	var versions []map[string]any
	e.call("POST", "/assistants/"+id+"/versions", alice, map[string]any{}, http.StatusOK, &versions)
	assert.Len(t, versions, 1, "no refused change made a version")
}

// TestAnAssistantKeepsItsNewestVersions: beyond MaxAssistantVersions, the
// oldest go; the latest stays.
func TestAnAssistantKeepsItsNewestVersions(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(configGraph(t, "cfg", false))})
	id := e.createAssistant(alice, map[string]any{})
	for i := range server.MaxAssistantVersions + 2 {
		e.call("PATCH", "/assistants/"+id, alice, map[string]any{"metadata": map[string]any{"i": i}}, http.StatusOK, nil)
	}
	var versions []map[string]any
	e.call("POST", "/assistants/"+id+"/versions", alice, map[string]any{"limit": 1000}, http.StatusOK, &versions)
	require.Len(t, versions, server.MaxAssistantVersions)
	assert.Equal(t, float64(server.MaxAssistantVersions+3), versions[0]["version"])
	assert.Equal(t, 4.0, versions[len(versions)-1]["version"])
}

// TestParallelAssistantCreationsGetExactlyTheQuota: 120 creations at once
// store exactly MaxAssistants, on one server's memory, SQLite and
// PostgreSQL, and through three replicas sharing a PostgreSQL store.
func TestParallelAssistantCreationsGetExactlyTheQuota(t *testing.T) {
	const quota, tries = 16, 120
	for _, kind := range []string{"memory", "sqlite", "postgres", "3 replicas"} {
		t.Run(kind, func(t *testing.T) {
			cfg := server.Config{Workflows: workflows(configGraph(t, "cfg", false)), MaxAssistants: quota}
			var envs []*env
			switch kind {
			case "memory":
				envs = []*env{newEnv(t, cfg)}
			case "3 replicas":
				cfg.Store = assistantStore(t, "postgres")
				envs = newReplicaSet(t, 3, time.Minute, cfg).envs
			default:
				cfg.Store = assistantStore(t, kind)
				envs = []*env{newEnv(t, cfg)}
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			statuses := map[int]int{}
			for i := range tries {
				wg.Go(func() {
					e := envs[i%len(envs)]
					body, _ := json.Marshal(map[string]any{"graph_id": "cfg", "metadata": map[string]any{"batch": "p"}})
					req, err := http.NewRequestWithContext(t.Context(), "POST", e.hs.URL+"/assistants", bytes.NewReader(body))
					if err != nil {
						panic(err)
					}
					req.Header.Set("Authorization", "Bearer "+alice)
					resp, err := e.client.Do(req)
					status := 0
					if err == nil {
						status = resp.StatusCode
						resp.Body.Close()
					}
					mu.Lock()
					statuses[status]++
					mu.Unlock()
				})
			}
			wg.Wait()
			assert.Equal(t, map[int]int{200: quota, 429: tries - quota}, statuses)
			var n int
			envs[0].call("POST", "/assistants/count", alice, map[string]any{"metadata": map[string]any{"batch": "p"}}, http.StatusOK, &n)
			assert.Equal(t, quota, n)
			envs[0].fails("POST", "/assistants", alice, map[string]any{"graph_id": "cfg"}, http.StatusTooManyRequests,
				server.ErrorDetail{Code: "quota_exceeded", Message: fmt.Sprintf(`owner "alice" has %d assistants, the most allowed: delete one first`, quota), Quota: "assistants", Limit: quota})
			var other map[string]any
			envs[0].call("POST", "/assistants", bob, map[string]any{"graph_id": "cfg"}, http.StatusOK, &other)
		})
	}
}

// TestACronOnAnAssistantRunsWithItsConfig: crons take a created
// assistant's id too, and its runs get its config.
func TestACronOnAnAssistantRunsWithItsConfig(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(configGraph(t, "cfg", false))})
	id := e.createAssistant(alice, map[string]any{"context": map[string]any{"model": "cron-model"}})
	th := e.platformThread(alice, nil)
	var c map[string]any
	e.call("POST", "/threads/"+th+"/runs/crons", alice, map[string]any{"assistant_id": id, "schedule": "@yearly", "input": map[string]any{"text": "x"}}, http.StatusOK, &c)
	due, err := time.Parse(time.RFC3339, c["next_run_date"].(string))
	require.NoError(t, err)
	server.FireCrons(e.srv, due)
	var runs []map[string]any
	e.call("GET", "/threads/"+th+"/runs", alice, nil, http.StatusOK, &runs)
	require.Len(t, runs, 1)
	assert.Equal(t, id, runs[0]["assistant_id"])
	var out map[string]any
	e.call("GET", "/threads/"+th+"/runs/"+runs[0]["run_id"].(string)+"/join", alice, nil, http.StatusOK, &out)
	assert.JSONEq(t, `{"model":"cron-model"}`, out["text"].(string))
}

// TestReplicasWithoutAStoreCreateNoAssistants: replicas keep assistants
// only in a shared store; without one, creation is a 501 saying so, and
// the workflows' assistants are still listed.
func TestReplicasWithoutAStoreCreateNoAssistants(t *testing.T) {
	rs := newReplicaSet(t, 1, time.Minute, server.Config{Workflows: workflows(configGraph(t, "cfg", false))})
	e := rs.envs[0]
	e.fails("POST", "/assistants", alice, map[string]any{"graph_id": "cfg"}, http.StatusNotImplemented, server.ErrorDetail{Code: "not_served",
		Message: "assistants need a store shared by the replicas (Config.Store): this server has none"})
	var n int
	e.call("POST", "/assistants/count", alice, map[string]any{}, http.StatusOK, &n)
	assert.Equal(t, 1, n)
}
