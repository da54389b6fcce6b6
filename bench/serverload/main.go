package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/server"
)

const token = "bench-token"

var (
	textKey  = graph.NewKey[string]("text")
	logKey   = graph.NewKey("log", graph.Append[string]())
	countKey = graph.NewKey("count", graph.Sum[int]())
)

type options struct {
	runs, nodes int
	saver, mode string
	timeout     time.Duration
	cpuprofile  string
	// The open-loop benchmark (-load open).
	load     string
	rate     float64
	duration time.Duration
	pgURL    string
}

func main() {
	var o options
	flag.IntVar(&o.runs, "runs", 200, "concurrent runs, one thread each")
	flag.IntVar(&o.nodes, "nodes", 10, "nodes of the workflow, in a chain")
	flag.StringVar(&o.saver, "saver", "memory", "memory or sqlite (a file in a temporary directory)")
	flag.StringVar(&o.mode, "mode", "wait", "wait (POST .../runs/wait) or stream (POST .../runs/stream, read to the end)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole benchmark")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the load phase to this file")
	flag.StringVar(&o.load, "load", "burst", "burst (-runs at once, server in process, no quotas) or open (server processes, default quotas, -rate runs/s for -duration)")
	flag.Float64Var(&o.rate, "rate", 20, "open: runs sent per second, on a fixed schedule")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "open: how long runs are sent")
	flag.StringVar(&o.pgURL, "pg-url", defaultPostgresURL, "open, -saver pg3: the PostgreSQL server (a fresh schema is made and dropped)")
	var so serverOptions
	var role string
	flag.StringVar(&role, "role", "", "internal: server, to be one of the open benchmark's server processes")
	flag.StringVar(&so.db, "db", "", "internal (-role server): the SQLite file")
	flag.StringVar(&so.pgSchema, "pg-schema", "", "internal (-role server): the replicas' schema")
	flag.StringVar(&so.name, "name", "", "internal (-role server): the replica's name")
	flag.Parse()
	var err error
	switch {
	case role == "server":
		so.saver, so.pgURL, so.nodes = o.saver, o.pgURL, o.nodes
		err = serve(so)
	case role != "":
		err = fmt.Errorf("unknown -role %q (server)", role)
	case o.load == "open":
		err = openLoop(o)
	case o.load == "burst":
		err = run(o)
	default:
		err = fmt.Errorf("unknown -load %q (burst or open)", o.load)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serverload:", err)
		os.Exit(1)
	}
}

// nodeRuns counts the runs of each node of each thread.
type nodeRuns struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *nodeRuns) add(thread, node string) {
	c.mu.Lock()
	c.n[thread+"/"+node]++
	c.mu.Unlock()
}

// workflow is a chain of n nodes; each calls the model once and writes its
// name to log and 1 to count.
func workflow(n int, model llms.Model, counts *nodeRuns) (*graph.Runnable, []string, error) {
	g := graph.New("chain", textKey, logKey, countKey)
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("n%02d", i)
	}
	for i, name := range names {
		g.AddNode(name, func(ctx context.Context, s graph.State) (graph.Command, error) {
			counts.add(graph.RuntimeString(ctx, server.RuntimeThread), name)
			start := time.Now()
			resp, err := model.GenerateContent(ctx, []llms.MessageContent{
				llms.TextParts(llms.ChatMessageTypeHuman, name+": "+textKey.Get(s)),
			})
			if err != nil {
				return graph.Command{}, err
			}
			graph.Emit(ctx, llm.ModelCall{
				Model: "scripted", Tier: "basic", PromptTokens: 8, CompletionTokens: len(resp.Choices[0].Content), Duration: time.Since(start),
			})
			return graph.Update(graph.AppendTo(logKey, name), countKey.Set(1)), nil
		})
		if i == 0 {
			g.AddEdge(graph.Start, name)
		} else {
			g.AddEdge(names[i-1], name)
		}
	}
	g.AddEdge(names[n-1], graph.End)
	r, err := g.Compile()
	return r, names, err
}

func run(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	model := scripted.New(scripted.Script{Default: &scripted.Reply{Text: "ok, done"}})
	counts := &nodeRuns{n: make(map[string]int)}
	wf, names, err := workflow(o.nodes, model, counts)
	if err != nil {
		return err
	}
	saver, closeSaver, err := openSaver(ctx, o.saver)
	if err != nil {
		return err
	}
	defer closeSaver()
	srv, err := server.New(server.Config{
		Workflows: map[string]*graph.Runnable{"chain": wf},
		Saver:     saver,
		Tokens:    map[string]string{token: "bench"},
		Logger:    slog.New(slog.DiscardHandler),
		// Every run is the one owner's: no per-owner quota of runs.
		MaxActiveRuns: -1, MaxQueuedRuns: -1,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := server.NewHTTPServer(srv, server.Limits{})
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.runs, MaxIdleConns: o.runs}}

	stopProfile, err := startProfile(o.cpuprofile)
	if err != nil {
		return err
	}
	peak := startPeakSampler()
	lat, wall, results, err := load(ctx, client, base, o)
	heapPeak := peak()
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	checkErr := verify(ctx, client, base, o, names, results, counts, model)

	shutdownCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	client.CloseIdleConnections()

	report(o, lat, wall, heapPeak)
	if checkErr != nil {
		return checkErr
	}
	fmt.Printf("check: %d runs done, each thread holds exactly %d log entries and count %d, each node ran once per thread, %d model calls\n",
		o.runs, o.nodes, o.nodes, o.runs*o.nodes)
	return nil
}

// startProfile starts a CPU profile into path, if set; the function it
// returns stops it and closes the file.
func startProfile(path string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func openSaver(ctx context.Context, kind string) (graph.Saver, func(), error) {
	switch kind {
	case "memory":
		return memory.New(), func() {}, nil
	case "sqlite":
		dir, err := os.MkdirTemp("", "serverload")
		if err != nil {
			return nil, nil, err
		}
		db, err := sqlite.Open(ctx, filepath.Join(dir, "threads.db"))
		if err != nil {
			return nil, nil, err
		}
		return db, func() { _ = db.Close(); _ = os.RemoveAll(dir) }, nil
	}
	return nil, nil, fmt.Errorf("unknown saver %q (memory or sqlite)", kind)
}

// load starts every run at once and returns each run's latency (from its
// run request to its result), the wall time, and each run's final Run.
func load(ctx context.Context, client *http.Client, base string, o options) ([]time.Duration, time.Duration, []server.Run, error) {
	for i := range o.runs {
		body := fmt.Sprintf(`{"workflow": "chain", "thread_id": "t%04d"}`, i)
		if _, err := call(ctx, client, "POST", base+"/v1/threads", body, http.StatusCreated); err != nil {
			return nil, 0, nil, err
		}
	}
	lat := make([]time.Duration, o.runs)
	results := make([]server.Run, o.runs)
	errs := make([]error, o.runs)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range o.runs {
		wg.Go(func() {
			<-gate
			start := time.Now()
			results[i], errs[i] = runOnce(ctx, client, base, o.mode, fmt.Sprintf("t%04d", i))
			lat[i] = time.Since(start)
		})
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	wall := time.Since(start)
	return lat, wall, results, errors.Join(errs...)
}

func runOnce(ctx context.Context, client *http.Client, base, mode, thread string) (server.Run, error) {
	body := fmt.Sprintf(`{"input": {"text": %q}}`, thread)
	var ru server.Run
	switch mode {
	case "wait":
		data, err := call(ctx, client, "POST", base+"/v1/threads/"+thread+"/runs/wait", body, http.StatusOK)
		if err != nil {
			return ru, err
		}
		return ru, json.Unmarshal(data, &ru)
	case "stream":
		return stream(ctx, client, base+"/v1/threads/"+thread+"/runs/stream", body)
	}
	return ru, fmt.Errorf("unknown mode %q (wait or stream)", mode)
}

// stream reads a run's events to its end event and returns the Run it
// carries; it checks that event ids have no gaps.
func stream(ctx context.Context, client *http.Client, url, body string) (server.Run, error) {
	var ru server.Run
	req, err := request(ctx, "POST", url, body)
	if err != nil {
		return ru, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return ru, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		return ru, fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, data)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var event string
	var lastID int64
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id, _ := strconv.ParseInt(line[4:], 10, 64)
			if id != lastID+1 {
				return ru, fmt.Errorf("%s: event id %d after %d", url, id, lastID)
			}
			lastID = id
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: ") && event == server.EventEnd:
			return ru, json.Unmarshal([]byte(line[6:]), &ru)
		}
	}
	if err := sc.Err(); err != nil {
		return ru, err
	}
	return ru, fmt.Errorf("%s: the stream ended without an end event", url)
}

func request(ctx context.Context, method, url, body string) (*http.Request, error) {
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return req, nil
}

func call(ctx context.Context, client *http.Client, method, url, body string, want int) ([]byte, error) {
	req, err := request(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: status %d, want %d: %s", method, url, resp.StatusCode, want, data)
	}
	return data, nil
}

// verify checks that no run was lost or duplicated.
func verify(ctx context.Context, client *http.Client, base string, o options, names []string,
	results []server.Run, counts *nodeRuns, model *scripted.Model) error {
	var problems []string
	seen := make(map[string]bool, len(results))
	for i, ru := range results {
		thread := fmt.Sprintf("t%04d", i)
		if ru.Status != server.StatusDone || ru.ThreadID != thread || seen[ru.ID] {
			problems = append(problems, fmt.Sprintf("run %d: status %q thread %q id %q (seen before: %v)", i, ru.Status, ru.ThreadID, ru.ID, seen[ru.ID]))
		}
		seen[ru.ID] = true
		data, err := call(ctx, client, "GET", base+"/v1/threads/"+thread+"/state", "", http.StatusOK)
		if err != nil {
			return err
		}
		var snap server.Snapshot
		if err := json.Unmarshal(data, &snap); err != nil {
			return err
		}
		var v struct {
			Text  string   `json:"text"`
			Log   []string `json:"log"`
			Count int      `json:"count"`
		}
		if err := json.Unmarshal(snap.Values, &v); err != nil {
			return err
		}
		if v.Text != thread || !slices.Equal(v.Log, names) || v.Count != o.nodes || len(snap.Next) != 0 {
			problems = append(problems, fmt.Sprintf("thread %s: final state %s (next %v)", thread, snap.Values, snap.Next))
		}
		for _, n := range names {
			if c := counts.n[thread+"/"+n]; c != 1 {
				problems = append(problems, fmt.Sprintf("thread %s: node %s ran %d times", thread, n, c))
			}
		}
	}
	if got := model.Usage().Calls; got != o.runs*o.nodes {
		problems = append(problems, fmt.Sprintf("the model was called %d times, want %d", got, o.runs*o.nodes))
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("... and %d more", len(problems)-10))
		}
		return fmt.Errorf("lost or duplicated work:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// startPeakSampler samples the heap every 5ms until the returned function
// is called, which returns the highest HeapInuse seen.
func startPeakSampler() func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak.Load()
	}
}

// vmHWM returns the process's peak resident set size from /proc, or 0.
func vmHWM() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func report(o options, lat []time.Duration, wall time.Duration, heapPeak uint64) {
	s := slices.Clone(lat)
	slices.Sort(s)
	pct := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("serverload: %d concurrent runs x %d nodes, saver=%s, mode=%s, GOMAXPROCS=%d\n",
		o.runs, o.nodes, o.saver, o.mode, runtime.GOMAXPROCS(0))
	fmt.Printf("latency (run request to result): p50 %v  p90 %v  p99 %v  max %v\n",
		pct(0.50).Round(time.Microsecond), pct(0.90).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), s[len(s)-1].Round(time.Microsecond))
	fmt.Printf("wall %v, %.0f runs/s, %.0f node runs/s\n", wall.Round(time.Millisecond),
		float64(o.runs)/wall.Seconds(), float64(o.runs*o.nodes)/wall.Seconds())
	fmt.Printf("memory: peak RSS (VmHWM) %.1f MiB, peak heap in use %.1f MiB, total allocated %.1f MiB, GC cycles %d\n",
		mib(vmHWM()), mib(heapPeak), mib(ms.TotalAlloc), ms.NumGC)
}
