package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/lgsdktest"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// failover is a reverse proxy in front of replicas, as a load balancer
// is: each request goes to the first replica that accepts a connection.
// It counts the requests that re-attach to a stream (with Last-Event-ID),
// by the replica that took them.
type failover struct {
	*httptest.Server
	mu         sync.Mutex
	reattached map[string]int
}

func newFailover(t *testing.T, reps ...*replica) *failover {
	t.Helper()
	f := &failover{reattached: map[string]int{}}
	hosts := make([]string, len(reps))
	for i, r := range reps {
		u, err := url.Parse(r.url)
		require.NoError(t, err)
		hosts[i] = u.Host
	}
	type tookKey struct{}
	var d net.Dialer
	tr := &http.Transport{
		DisableKeepAlives: true, // each request finds a live replica
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var errs []error
			for i, h := range hosts {
				c, err := d.DialContext(ctx, network, h)
				if err == nil {
					if took, ok := ctx.Value(tookKey{}).(*string); ok {
						*took = reps[i].name
					}
					return c, nil
				}
				errs = append(errs, err)
			}
			return nil, errors.Join(errs...)
		},
	}
	first, err := url.Parse(reps[0].url)
	require.NoError(t, err)
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(first) },
		Transport:     tr,
		FlushInterval: -1,
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var took string
		proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tookKey{}, &took)))
		if r.Header.Get("Last-Event-ID") != "" {
			f.mu.Lock()
			f.reattached[took]++
			f.mu.Unlock()
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// TestTheLangGraphSDKReattachesByItselfAfterAReplicaIsKilled: the SDK,
// through a proxy in front of two `coorflow serve` replicas, streams a
// run as it creates it and joins it, and a stateless run (POST
// /runs/stream), all on replica A; A is killed (SIGKILL) mid-run. Each
// stream goes on by itself: the SDK re-attaches to the stream's Location
// with Last-Event-ID, the proxy takes it to B, and the SDK sees the run's
// whole stream, each event once (internal/lgsdktest/reattach.mjs checks
// that); with each pinned SDK.
func TestTheLangGraphSDKReattachesByItselfAfterAReplicaIsKilled(t *testing.T) {
	for _, sdk := range lgsdktest.SDKs {
		lgsdktest.NodeModulesOf(t, sdk) // skip before building when an SDK is absent
	}
	bin := buildCoorflow(t)
	for _, sdk := range lgsdktest.SDKs {
		t.Run(sdk.Version, func(t *testing.T) { sdkReattachesByItself(t, bin, sdk) })
	}
}

// sdkReattachesByItself is TestTheLangGraphSDKReattachesByItselfAfterAReplicaIsKilled
// with sdk, on a database of its own.
func sdkReattachesByItself(t *testing.T, bin string, sdk lgsdktest.SDK) {
	dbURL := freshDatabase(t)
	dir := t.TempDir()
	// Two runs of three calls, each of which may repeat the call in
	// flight at the kill.
	answers := make([]openaitest.Response, 12)
	for i := range answers {
		answers[i] = openaitest.Delayed(time.Second, openaitest.Text("fine"))
	}
	model := openaitest.NewServer(answers...)
	t.Cleanup(model.Close)
	chain := filepath.Join(dir, "chain.yaml")
	require.NoError(t, os.WriteFile(chain, fmt.Appendf(nil, chainWorkflow, model.BaseURL()), 0o600))
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("sdk-secret=alice\n"), 0o600))

	const leaseTTL = 3 * time.Second
	args := []string{chain, "--db", dbURL, "--token-file", tokens, "--lease-ttl", leaseTTL.String()}
	a, b := startReplica(t, bin, "a", args...), startReplica(t, bin, "b", args...)
	lb := newFailover(t, a, b)
	killed := false
	rep := lgsdktest.RunReattach(t, sdk, lgsdktest.ReattachEnv{URL: lb.URL, Token: "sdk-secret", Chain: "chain"}, func() {
		require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
		killed = true
	})
	require.True(t, killed)
	assert.Equal(t, []string{"created", "joined", "stateless"}, rep.Steps)
	lb.mu.Lock()
	assert.GreaterOrEqual(t, lb.reattached["b"], 3, "the three streams re-attached on B (%v)", lb.reattached)
	assert.Zero(t, lb.reattached["a"], "none on A")
	lb.mu.Unlock()
	var run struct {
		Status    string `json:"status"`
		Replica   string `json:"replica"`
		Takeovers int    `json:"takeovers"`
	}
	for _, r := range []lgsdktest.ReattachedRun{{ThreadID: rep.ThreadID, RunID: rep.RunID}, rep.Stateless} {
		api(t, "sdk-secret", http.MethodGet, b.url+"/v1/threads/"+r.ThreadID+"/runs/"+r.RunID, nil, &run)
		assert.Equal(t, "done", run.Status)
		assert.Equal(t, "b", run.Replica, "B finished the run A began")
		assert.Equal(t, 1, run.Takeovers)
	}
	t.Logf("the SDK %s's two streams of one run and the stream of a stateless run re-attached to B by themselves after A's SIGKILL: %d and %d events, re-attachments %v",
		sdk.Version, rep.Events, rep.Stateless.Events, lb.reattached)
}
