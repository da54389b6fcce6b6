package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/lgsdktest"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// chainWorkflow makes three model calls in a row, each a journaled call
// whose prompt names the run's topic: the model server counts the calls
// by prompt.
const chainWorkflow = `apiVersion: coorflow/v1
name: chain
input: topic
output: c
state:
  topic: {type: string}
  a: {type: string}
  b: {type: string}
  c: {type: string}
models:
  basic: {provider: openai, model: gpt-4o-mini, base_url: "%s"}
nodes:
  one: {type: llm, prompt: "one {{ state.topic }}", output: a}
  two: {type: llm, prompt: "two {{ state.topic }}", output: b}
  three: {type: llm, prompt: "three {{ state.topic }}", output: c}
edges:
  - {from: start, to: one}
  - {from: one, to: two}
  - {from: two, to: three}
  - {from: three, to: end}
`

// replica is one `coorflow serve` process.
type replica struct {
	name string
	url  string
	cmd  *exec.Cmd
	logs *lockedBuffer
}

// startReplica starts `coorflow serve` on loopback and waits for the line
// that says where it listens.
func startReplica(t *testing.T, bin, name string, args ...string) *replica {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--replica", name}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPENAI_API_KEY=sk-test"}
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	r := &replica{name: name, cmd: cmd, logs: logs}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("replica %s logs:\n%s", name, logs.String())
		}
	})
	lines := bufio.NewScanner(stdout)
	serving := regexp.MustCompile(`^serving (http://\S+) `)
	for lines.Scan() {
		if m := serving.FindStringSubmatch(lines.Text()); m != nil {
			r.url = m[1]
			break
		}
	}
	require.NotEmpty(t, r.url, "replica %s did not start: %s", name, logs.String())
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return r
}

// api calls a replica's /v1 API with the bearer token tok.
func api(t *testing.T, tok, method, url string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil && resp.StatusCode < 300 {
		require.NoError(t, json.Unmarshal(data, out), "%s %s: %s", method, url, data)
	}
	require.Less(t, resp.StatusCode, 300, "%s %s: %s", method, url, data)
	return resp.StatusCode
}

// sse is one event a stream received.
type sse struct {
	id   int64
	name string
	data string
}

// readStream reads server-sent events from body until the end event or an
// error, appending them to got; it reports whether the end was seen.
func readStream(body io.Reader, got *[]sse, seen func(sse)) bool {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var cur sse
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name == "" {
				continue
			}
			*got = append(*got, cur)
			seen(cur)
			if cur.name == "end" {
				return true
			}
			cur = sse{}
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	return false
}

// follow streams a run from the replicas in order, from the first that
// answers, re-attaching with Last-Event-ID after a replica goes away,
// until the run's end event.
func follow(t *testing.T, tok, path string, replicas func() []*replica, seen func(sse)) ([]sse, int) {
	var got []sse
	attaches := 0
	for {
		for _, r := range replicas() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, r.url+path, nil)
			if err != nil {
				return got, attaches
			}
			req.Header.Set("Authorization", "Bearer "+tok)
			if n := len(got); n > 0 {
				req.Header.Set("Last-Event-ID", strconv.FormatInt(got[n-1].id, 10))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				continue
			}
			attaches++
			if resp.StatusCode != http.StatusOK {
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Errorf("GET %s from %s: %s: %s", path, r.name, resp.Status, data)
				return got, attaches
			}
			done := readStream(resp.Body, &got, seen)
			resp.Body.Close()
			if done || t.Context().Err() != nil {
				return got, attaches
			}
		}
		if t.Context().Err() != nil {
			return got, attaches
		}
	}
}

// TestReplicasShareRunsAndTakeOverFromAKilledOne runs 100 runs on three
// `coorflow serve` processes over one PostgreSQL database, kills one with
// SIGKILL while it runs some, and checks that every run finishes once,
// that no journaled model call is made twice but the ones in flight at
// the kill, and that every stream — each read from a replica that did
// not start the run, re-attached after the kill — got every event.
func TestReplicasShareRunsAndTakeOverFromAKilledOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers and runs 100 runs")
	}
	dbURL := freshDatabase(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "coorflow")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	// The lease is short for a test, long enough for a loaded machine to
	// renew it in time: only the killed replica's runs are taken over.
	const runs, calls, leaseTTL = 100, 3, 3 * time.Second
	responses := make([]openaitest.Response, 2*runs*calls)
	for i := range responses {
		responses[i] = openaitest.Delayed(100*time.Millisecond, openaitest.Text("fine"))
	}
	model := openaitest.NewServer(responses...)
	t.Cleanup(model.Close)
	wf := filepath.Join(dir, "chain.yaml")
	require.NoError(t, os.WriteFile(wf, fmt.Appendf(nil, chainWorkflow, model.BaseURL()), 0o600))
	tokens := filepath.Join(dir, "tokens")
	// Ten owners, ten runs each: within an owner's quota of runs at once.
	var lines strings.Builder
	for o := range 10 {
		fmt.Fprintf(&lines, "tok%d=owner%d\n", o, o)
	}
	require.NoError(t, os.WriteFile(tokens, []byte(lines.String()), 0o600))
	tokenOf := func(i int) string { return fmt.Sprintf("tok%d", i%10) }

	reps := make([]*replica, 3)
	for i := range reps {
		reps[i] = startReplica(t, bin, fmt.Sprintf("r%d", i), wf, "--db", dbURL, "--token-file", tokens, "--lease-ttl", leaseTTL.String())
	}
	victim := reps[0]
	var mu sync.Mutex
	killed := false
	alive := func(from int) func() []*replica {
		return func() []*replica {
			mu.Lock()
			defer mu.Unlock()
			var out []*replica
			for k := range reps {
				r := reps[(from+k)%len(reps)]
				if r != victim || !killed {
					out = append(out, r)
				}
			}
			return out
		}
	}

	// Submit the runs at once, each to replica i%3, which runs it, and
	// follow each from a replica that does not run it; kill the victim
	// once three of its runs are between their first and last model
	// calls.
	type runRef struct {
		thread, id string
		on         int
	}
	refs := make([]runRef, runs)
	kill := make(chan struct{})
	ended := 0
	midway := map[int]bool{} // the victim's runs between their first and last call
	var once sync.Once
	// posted counts the runs every replica has accepted: the kill waits
	// for all of them, or a request still on its way to the victim would
	// fail with the connection rather than test a takeover.
	var posted atomic.Int32
	seen := func(i int) func(sse) {
		return func(ev sse) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case ev.name == "end":
				ended++
				delete(midway, i)
			case ev.name == "node_end" && i%3 == 0 && strings.Contains(ev.data, `"node":"one"`):
				midway[i] = true
			case ev.name == "node_start" && i%3 == 0 && strings.Contains(ev.data, `"node":"three"`):
				delete(midway, i)
			}
			if len(midway) >= 3 && posted.Load() == runs {
				once.Do(func() { close(kill) })
			}
		}
	}
	streams := make([][]sse, runs)
	attaches := make([]int, runs)
	var wg sync.WaitGroup
	for i := range refs {
		wg.Go(func() {
			r := reps[i%3]
			var th struct {
				ID string `json:"thread_id"`
			}
			api(t, tokenOf(i), http.MethodPost, r.url+"/v1/threads", map[string]any{"workflow": "chain"}, &th)
			var ru struct {
				ID      string `json:"run_id"`
				Replica string `json:"replica"`
			}
			api(t, tokenOf(i), http.MethodPost, r.url+"/v1/threads/"+th.ID+"/runs", map[string]any{"input": map[string]string{"topic": fmt.Sprintf("topic-%d", i)}}, &ru)
			assert.Equal(t, r.name, ru.Replica, "the replica that took the request runs the run")
			refs[i] = runRef{thread: th.ID, id: ru.ID, on: i % 3}
			posted.Add(1)
			path := "/v1/threads/" + th.ID + "/runs/" + ru.ID + "/stream"
			streams[i], attaches[i] = follow(t, tokenOf(i), path, alive(i%3+1), seen(i))
		})
	}
	allDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(allDone)
	}()
	var killedAt time.Time
	endedAtKill, callsAtKill := 0, 0
	select {
	case <-allDone:
	case <-kill:
		callsAtKill = len(model.Requests())
		mu.Lock()
		endedAtKill = ended
		mu.Unlock()
		require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
		killedAt = time.Now()
		mu.Lock()
		killed = true
		mu.Unlock()
	}
	<-allDone
	require.False(t, killedAt.IsZero(), "the victim was killed mid-way")

	// Every run ended done, once, with the answer of its last call.
	survivor := reps[1]
	takeovers, takenOver := 0, 0
	var takeoverTimes []time.Duration
	for i, ref := range refs {
		var v struct {
			Status    string            `json:"status"`
			Replica   string            `json:"replica"`
			Takeovers int               `json:"takeovers"`
			Values    map[string]string `json:"values"`
			Error     json.RawMessage   `json:"error"`
		}
		api(t, tokenOf(i), http.MethodGet, survivor.url+"/v1/threads/"+ref.thread+"/runs/"+ref.id, nil, &v)
		assert.Equal(t, "done", v.Status, "run %d: %s", i, v.Error)
		assert.Equal(t, "fine", v.Values["c"], "run %d", i)
		takeovers += v.Takeovers
		if v.Takeovers > 0 {
			takenOver++
			assert.Equal(t, 0, ref.on, "only the victim's runs are taken over (run %d)", i)
			assert.NotEqual(t, victim.name, v.Replica)
		}
		// The stream got every event, in order, once; and exactly one end
		// of the run.
		got := streams[i]
		require.NotEmpty(t, got, "run %d", i)
		for k, ev := range got {
			assert.Equal(t, int64(k+1), ev.id, "run %d: event %d of the stream", i, k)
		}
		ends := 0
		for _, ev := range got {
			if ev.name == "run_end" && strings.Contains(ev.data, `"path":"chain"`) {
				ends++
			}
		}
		assert.Equal(t, 1, ends, "run %d ended once", i)
		assert.Equal(t, "end", got[len(got)-1].name)
		// A replay from the start is what the stream got.
		replay, _ := follow(t, tokenOf(i), "/v1/threads/"+ref.thread+"/runs/"+ref.id+"/stream", alive(2), func(sse) {})
		assert.Equal(t, len(got), len(replay), "run %d", i)
		if len(replay) == len(got) {
			for k := range got[:len(got)-1] {
				assert.Equal(t, got[k], replay[k], "run %d event %d", i, k+1)
			}
		}
		if v.Takeovers > 0 {
			// The recording the first replica began goes on to the end.
			var rec struct {
				Status string `json:"status"`
				Events int64  `json:"events"`
			}
			api(t, tokenOf(i), http.MethodGet, survivor.url+"/v1/trace/runs/"+ref.id, nil, &rec)
			assert.Equal(t, "done", rec.Status, "run %d", i)
			// As far as the stream, and further by the events the killed
			// replica recorded and did not get to share.
			assert.GreaterOrEqual(t, rec.Events, got[len(got)-2].id, "run %d", i)
			for _, ev := range got {
				var e struct {
					Kind string    `json:"kind"`
					Path string    `json:"path"`
					Time time.Time `json:"time"`
				}
				require.NoError(t, json.Unmarshal([]byte(ev.data), &e))
				if e.Kind == "run_start" && e.Path == "chain" && e.Time.After(killedAt) {
					takeoverTimes = append(takeoverTimes, e.Time.Sub(killedAt))
					break
				}
			}
		}
	}
	require.Positive(t, takenOver, "the victim had runs in flight")

	// Every journaled call was made once, but the one in flight on each
	// run taken over at the kill.
	count := map[string]int{}
	for _, req := range model.Requests() {
		msgs := req.Chat.Messages
		require.NotEmpty(t, msgs)
		count[msgs[len(msgs)-1].Text()]++
	}
	repeats := 0
	for i, ref := range refs {
		repeatedHere := 0
		for _, step := range []string{"one", "two", "three"} {
			key := fmt.Sprintf("%s topic-%d", step, i)
			n := count[key]
			if ref.on != 0 {
				assert.Equal(t, 1, n, "call %q of run %d", key, i)
				continue
			}
			assert.GreaterOrEqual(t, n, 1, "call %q of run %d", key, i)
			repeatedHere += n - 1
		}
		assert.LessOrEqual(t, repeatedHere, 1, "run %d repeats at most the call in flight at the kill", i)
		repeats += repeatedHere
	}
	slices.Sort(takeoverTimes)
	reattached := 0
	for _, n := range attaches {
		if n > 1 {
			reattached++
		}
	}
	t.Logf("replicas: %d runs on 3 replicas, 1 killed (SIGKILL) when %d runs had ended and %d of %d model calls had been asked; %d runs taken over (%d takeovers), %d calls repeated (in flight at the kill), %d streams re-attached with Last-Event-ID",
		runs, endedAtKill, callsAtKill, runs*calls, takenOver, takeovers, repeats, reattached)
	if n := len(takeoverTimes); n > 0 {
		t.Logf("replicas: time from the kill to the taking replica's first event (lease %v): min %v, median %v, max %v",
			leaseTTL, takeoverTimes[0].Round(time.Millisecond), takeoverTimes[n/2].Round(time.Millisecond), takeoverTimes[n-1].Round(time.Millisecond))
	}
}

// TestTheLangGraphSDKFollowsRunsAcrossReplicas drives two `coorflow serve`
// replicas on one PostgreSQL database with the official LangGraph SDK
// (internal/lgsdktest/replicas.mjs): runs replica A takes are streamed,
// joined, listed, cancelled and preempted through B; then A is killed
// (SIGKILL) while it runs a streamed run, which B takes over and the SDK
// follows on B with joinStream and Last-Event-ID, seeing every event once;
// with each pinned SDK.
func TestTheLangGraphSDKFollowsRunsAcrossReplicas(t *testing.T) {
	for _, sdk := range lgsdktest.SDKs {
		lgsdktest.NodeModulesOf(t, sdk) // skip before building when an SDK is absent
	}
	bin := buildCoorflow(t)
	for _, sdk := range lgsdktest.SDKs {
		t.Run(sdk.Version, func(t *testing.T) { sdkFollowsRunsAcrossReplicas(t, bin, sdk) })
	}
}

// sdkFollowsRunsAcrossReplicas is TestTheLangGraphSDKFollowsRunsAcrossReplicas
// with sdk, on a database of its own.
func sdkFollowsRunsAcrossReplicas(t *testing.T, bin string, sdk lgsdktest.SDK) {
	dbURL := freshDatabase(t)
	dir := t.TempDir()
	// Each call takes a second: the kill, once the first has been
	// answered, comes while the second is asked.
	answers := make([]openaitest.Response, 12)
	for i := range answers {
		answers[i] = openaitest.Delayed(time.Second, openaitest.Text("fine"))
	}
	model := openaitest.NewServer(answers...)
	t.Cleanup(model.Close)
	never := make([]openaitest.Response, 12)
	for i := range never {
		never[i] = openaitest.Delayed(time.Hour, openaitest.Text("too late"))
	}
	silent := openaitest.NewServer(never...)
	t.Cleanup(silent.Close)
	chain, stuck := filepath.Join(dir, "chain.yaml"), filepath.Join(dir, "stuck.yaml")
	require.NoError(t, os.WriteFile(chain, fmt.Appendf(nil, chainWorkflow, model.BaseURL()), 0o600))
	stuckYAML := strings.Replace(fmt.Sprintf(chainWorkflow, silent.BaseURL()), "\nname: chain\n", "\nname: stuck\n", 1)
	require.NoError(t, os.WriteFile(stuck, []byte(stuckYAML), 0o600))
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("sdk-secret=alice\n"), 0o600))

	const leaseTTL = 3 * time.Second
	args := []string{chain, stuck, "--db", dbURL, "--token-file", tokens, "--lease-ttl", leaseTTL.String()}
	a, b := startReplica(t, bin, "a", args...), startReplica(t, bin, "b", args...)
	var killedAt time.Time
	rep := lgsdktest.RunReplicas(t, sdk, lgsdktest.ReplicasEnv{A: a.url, B: b.url, Token: "sdk-secret", Chain: "chain", Stuck: "stuck"}, func() {
		require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
		killedAt = time.Now()
	})

	assert.Equal(t, []string{"across", "cancel", "multitask", "takeover"}, rep.Steps)
	assert.Equal(t, []string{"interrupted", "interrupted"}, rep.Multitask, "r3 cancelled, r2 rolled back (gone), r1 preempted")
	require.False(t, killedAt.IsZero(), "replica A was killed")
	v := rep.Victim
	var run struct {
		Status    string `json:"status"`
		Replica   string `json:"replica"`
		Takeovers int    `json:"takeovers"`
	}
	api(t, "sdk-secret", http.MethodGet, b.url+"/v1/threads/"+v.ThreadID+"/runs/"+v.RunID, nil, &run)
	assert.Equal(t, "done", run.Status)
	assert.Equal(t, "b", run.Replica, "B finished the run A began")
	assert.Equal(t, 1, run.Takeovers)
	// When B took the run over: the run's first event after the kill.
	events, _ := follow(t, "sdk-secret", "/v1/threads/"+v.ThreadID+"/runs/"+v.RunID+"/stream", func() []*replica { return []*replica{b} }, func(sse) {})
	var takeover time.Duration
	for _, ev := range events {
		var e struct {
			Kind string    `json:"kind"`
			Time time.Time `json:"time"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &e))
		if e.Kind == "run_start" && e.Time.After(killedAt) {
			takeover = e.Time.Sub(killedAt)
			break
		}
	}
	assert.Positive(t, takeover, "B started the run again after the kill")
	t.Logf("replicas with the SDK %s: 2 replicas, A killed (SIGKILL) after the run's first node; the SDK's stream had %d events from A (to Last-Event-ID %s: %q), %d from B; B took the run over %v after the kill (lease %v)",
		sdk.Version, v.Before, v.LastEventID, rep.StreamError, v.After, takeover.Round(time.Millisecond), leaseTTL)
}
