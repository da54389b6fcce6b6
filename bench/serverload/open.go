package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgdb"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
)

// maxArrivals bounds the runs one open-loop benchmark sends (-rate ×
// -duration).
const maxArrivals = 20000

// defaultPostgresURL is the PostgreSQL server of this machine and of CI.
const defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test"

// serverOptions configure one server process (-role server).
type serverOptions struct {
	saver    string // sqlite or postgres
	db       string // sqlite: the database file
	pgURL    string // postgres: the server
	pgSchema string // postgres: the schema the replicas share
	name     string // postgres: the replica's name
	nodes    int
}

// serve is a server process: it serves the chain workflow with the
// server's default quotas on 127.0.0.1:0, prints "addr HOST:PORT" on
// stdout once it answers, and shuts down when stdin closes or on SIGTERM.
func serve(so serverOptions) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	model := scripted.New(scripted.Script{Default: &scripted.Reply{Text: "ok, done"}})
	wf, _, err := workflow(so.nodes, model, &nodeRuns{n: make(map[string]int)})
	if err != nil {
		return err
	}
	// Quotas are the server's defaults (MaxActiveRuns 16, MaxQueuedRuns
	// 64 per owner): every run here is the one owner's.
	cfg := server.Config{
		Workflows: map[string]*graph.Runnable{"chain": wf},
		Tokens:    map[string]string{token: "bench"},
		Logger:    slog.New(slog.DiscardHandler),
	}
	closers := []func(){}
	defer func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}()
	switch so.saver {
	case "sqlite":
		db, err := sqlite.Open(ctx, so.db)
		if err != nil {
			return err
		}
		closers = append(closers, func() { _ = db.Close() })
		cfg.Saver = db
	case "postgres":
		pcfg, err := pgxpool.ParseConfig(so.pgURL)
		if err != nil {
			return err
		}
		pcfg.MaxConns = pgdb.MaxConns()
		if dir := os.Getenv("SERVERLOAD_PGTRACE"); dir != "" {
			tr := &pgTracer{m: map[string]*stat{}}
			pcfg.ConnConfig.Tracer = tr
			closers = append(closers, func() { tr.dump(dir + "/" + so.name + ".txt") })
		}
		pool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			return err
		}
		closers = append(closers, pool.Close)
		saver := postgres.New(pool, postgres.WithSchema(so.pgSchema))
		reps, err := replicas.New(pool, replicas.Config{Saver: saver, Name: so.name, Schema: so.pgSchema})
		if err != nil {
			return err
		}
		if err := reps.Start(ctx); err != nil {
			return err
		}
		closers = append(closers, func() { _ = reps.Close() })
		cfg.Saver, cfg.Replicas = saver, reps
	default:
		return fmt.Errorf("serverload: unknown server saver %q (sqlite or postgres)", so.saver)
	}
	srv, err := server.New(cfg)
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
	fmt.Printf("addr %s\n", ln.Addr())
	stdinClosed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stdinClosed) }()
	select {
	case <-ctx.Done():
	case <-stdinClosed:
	case err := <-served:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(hs.Shutdown(sctx), srv.Shutdown(sctx))
}

// child is one server process the open-loop benchmark started.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
}

// startChild starts this program as a server process with args and waits
// for its address.
func startChild(ctx context.Context, args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, append([]string{"-role", "server"}, args...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "addr ")
	if err != nil || !ok {
		_ = stdin.Close()
		return nil, errors.Join(fmt.Errorf("serverload: server process %v printed %q, want its address", args, line), err, cmd.Wait())
	}
	return &child{cmd: cmd, stdin: stdin, addr: addr}, nil
}

// stop closes the child's stdin, which shuts it down, and waits for it.
func (c *child) stop() error {
	_ = c.stdin.Close()
	return c.cmd.Wait()
}

// arrival is what became of one run of the open-loop benchmark.
type arrival struct {
	status    int           // the run request's status; 0: no answer
	admission time.Duration // from the request to its status
	complete  time.Duration // from the request to the run's end event (admitted runs)
	err       error
	done      bool // the run ended done
}

// openLoop starts the server processes, sends -rate runs a second for
// -duration on a fixed schedule (whatever the answers), each on a thread
// of its own, through /runs/stream, and reports.
func openLoop(o options) error {
	n := int(o.rate * o.duration.Seconds())
	if err := checkOpen(o, n); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "serverload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	nodes := strconv.Itoa(o.nodes)
	var children []*child
	var schema string // pg3: the replicas' schema, dropped once they stopped
	defer func() {
		for _, c := range children {
			if err := c.stop(); err != nil {
				fmt.Fprintln(os.Stderr, "serverload: server process:", err)
			}
		}
		if schema != "" {
			dropSchema(o.pgURL, schema)
		}
	}()
	switch o.saver {
	case "sqlite":
		c, err := startChild(ctx, "-saver", "sqlite", "-db", filepath.Join(dir, "threads.db"), "-nodes", nodes)
		if err != nil {
			return err
		}
		children = append(children, c)
	case "pg3":
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		schema = "serverload_" + hex.EncodeToString(b)
		// One after the other: the first creates the schema's tables.
		for i := range 3 {
			c, err := startChild(ctx, "-saver", "postgres", "-pg-url", o.pgURL, "-pg-schema", schema, "-name", "r"+strconv.Itoa(i), "-nodes", nodes)
			if err != nil {
				return err
			}
			children = append(children, c)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxIdleConns: 1024}}
	defer client.CloseIdleConnections()
	base := func(i int) string { return "http://" + children[i%len(children)].addr }
	if err := createThreads(ctx, client, base, n); err != nil {
		return err
	}
	pids := make([]int, len(children))
	for i, c := range children {
		pids[i] = c.cmd.Process.Pid
	}
	var active atomic.Int64
	mem := startRSSSampler(pids, &active)
	res := make([]arrival, n)
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / o.rate)
	start := time.Now()
	var lastEnd atomic.Int64
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			res[i].err = ctx.Err()
			continue
		}
		wg.Go(func() {
			res[i] = fire(ctx, client, base(i), fmt.Sprintf("t%05d", i), &active)
			if end := int64(time.Since(start)); res[i].done {
				for {
					old := lastEnd.Load()
					if end <= old || lastEnd.CompareAndSwap(old, end) {
						break
					}
				}
			}
		})
	}
	sent := time.Since(start)
	wg.Wait()
	m := mem()
	reportOpen(os.Stdout, o, len(children), res, sent, time.Duration(lastEnd.Load()), m)
	var errs []error
	for i, a := range res {
		if a.err != nil {
			errs = append(errs, fmt.Errorf("run %d: %w", i, a.err))
		}
	}
	if len(errs) > 10 {
		errs = append(errs[:10], fmt.Errorf("... and %d more", len(errs)-10))
	}
	return errors.Join(errs...)
}

// checkOpen checks the open-loop flags; n is the number of arrivals.
func checkOpen(o options, n int) error {
	switch {
	case o.saver != "sqlite" && o.saver != "pg3":
		return fmt.Errorf("serverload: -load open needs -saver sqlite or pg3, not %q", o.saver)
	case o.rate <= 0 || o.duration <= 0:
		return fmt.Errorf("serverload: -rate (%v) and -duration (%v) must be positive", o.rate, o.duration)
	case n < 1:
		return fmt.Errorf("serverload: -rate %v for -duration %v sends no run", o.rate, o.duration)
	case n > maxArrivals:
		return fmt.Errorf("serverload: -rate %v for -duration %v sends %d runs, more than the %d allowed", o.rate, o.duration, n, maxArrivals)
	}
	return nil
}

// createThreads creates threads t00000..t<n-1>, eight requests at a time,
// spread over the servers.
func createThreads(ctx context.Context, client *http.Client, base func(int) string, n int) error {
	next := atomic.Int64{}
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || errs[w] != nil {
					return
				}
				body := fmt.Sprintf(`{"workflow": "chain", "thread_id": "t%05d"}`, i)
				_, errs[w] = call(ctx, client, "POST", base(i)+"/v1/threads", body, http.StatusCreated)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// fire sends one run request and reads its stream to the end.
func fire(ctx context.Context, client *http.Client, base, thread string, active *atomic.Int64) arrival {
	var a arrival
	req, err := request(ctx, "POST", base+"/v1/threads/"+thread+"/runs/stream", fmt.Sprintf(`{"input": {"text": %q}}`, thread))
	if err != nil {
		a.err = err
		return a
	}
	start := time.Now()
	resp, err := client.Do(req)
	a.admission = time.Since(start)
	if err != nil {
		a.err = err
		return a
	}
	defer resp.Body.Close()
	a.status = resp.StatusCode
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		_, _ = io.Copy(io.Discard, resp.Body)
		return a
	case resp.StatusCode != http.StatusOK:
		data, _ := io.ReadAll(resp.Body)
		a.err = fmt.Errorf("%s: status %d: %s", thread, resp.StatusCode, data)
		return a
	}
	active.Add(1)
	defer active.Add(-1)
	ru, err := readEnd(resp.Body)
	a.complete = time.Since(start)
	if err != nil {
		a.err = fmt.Errorf("%s: %w", thread, err)
		return a
	}
	a.done = ru.Status == server.StatusDone
	if !a.done {
		a.err = fmt.Errorf("%s: run ended %q", thread, ru.Status)
	}
	return a
}

// readEnd reads server-sent events to the end event and returns its Run.
func readEnd(r io.Reader) (server.Run, error) {
	var ru server.Run
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: ") && event == server.EventEnd:
			return ru, json.Unmarshal([]byte(line[6:]), &ru)
		}
	}
	if err := sc.Err(); err != nil {
		return ru, err
	}
	return ru, errors.New("the stream ended without an end event")
}

// dropSchema drops the schema the replicas shared.
func dropSchema(url, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serverload: drop schema:", err)
		return
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		fmt.Fprintln(os.Stderr, "serverload: drop schema:", err)
	}
}

// memSample is the server processes' memory while runs were active.
type memSample struct {
	base      uint64 // total VmRSS before the load, bytes
	peak      uint64 // highest total VmRSS seen
	atActive  int64  // the most runs active at once, as the client saw
	rssActive uint64 // total VmRSS when atActive was seen
}

// startRSSSampler samples the total VmRSS of pids every 50ms, with the
// number of active runs, until the returned function is called.
func startRSSSampler(pids []int, active *atomic.Int64) func() memSample {
	total := func() uint64 {
		var t uint64
		for _, pid := range pids {
			data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
			if err == nil {
				t += statusKB(string(data), "VmRSS") << 10
			}
		}
		return t
	}
	m := memSample{base: total()}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			rss, act := total(), active.Load()
			m.peak = max(m.peak, rss)
			if act > m.atActive {
				m.atActive, m.rssActive = act, rss
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() memSample {
		close(stop)
		<-done
		return m
	}
}

// statusKB returns the value, in kB, of field in a /proc/PID/status text,
// or 0.
func statusKB(status, field string) uint64 {
	for line := range strings.SplitSeq(status, "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

// percentile returns the p-th quantile (0 < p ≤ 1) of sorted by the
// nearest-rank method, or 0 when sorted is empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p*float64(len(sorted)) + 0.9999999)
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func reportOpen(w io.Writer, o options, procs int, res []arrival, sent, lastEnd time.Duration, m memSample) {
	var adm, comp []time.Duration
	var ok, refused, failed, done int
	for _, a := range res {
		switch {
		case a.status == http.StatusOK:
			ok++
		case a.status == http.StatusTooManyRequests:
			refused++
		}
		if a.status != 0 {
			adm = append(adm, a.admission)
		}
		if a.done {
			done++
			comp = append(comp, a.complete)
		}
		if a.err != nil {
			failed++
		}
	}
	slices.Sort(adm)
	slices.Sort(comp)
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(w, "serverload open: saver=%s (%d server processes), %d nodes, offered %.0f runs/s for %v (sent in %v), default quotas\n",
		o.saver, procs, o.nodes, o.rate, o.duration, sent.Round(time.Millisecond))
	fmt.Fprintf(w, "runs: %d sent, %d admitted (200), %d refused (429), %d done, %d failed\n", len(res), ok, refused, done, failed)
	if lastEnd > 0 {
		fmt.Fprintf(w, "sustained: %.1f runs/s done (done / time from the first request to the last run's end, %v)\n",
			float64(done)/lastEnd.Seconds(), lastEnd.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "admission (request to 200/429): p50 %v  p99 %v  max %v\n",
		r(percentile(adm, 0.5)), r(percentile(adm, 0.99)), r(percentile(adm, 1)))
	fmt.Fprintf(w, "completion (request to end event): p50 %v  p99 %v  max %v\n",
		r(percentile(comp, 0.5)), r(percentile(comp, 0.99)), r(percentile(comp, 1)))
	perRun := func(rss uint64) string {
		if m.atActive <= 0 || rss <= m.base {
			return "n/a"
		}
		return fmt.Sprintf("%.0f KiB", float64(rss-m.base)/float64(m.atActive)/1024)
	}
	fmt.Fprintf(w, "memory (servers' VmRSS): before %.1f MiB, peak %.1f MiB; %d runs active at most, RSS then %.1f MiB: %s per active run (bound: peak delta / most active, %s)\n",
		mib(m.base), mib(m.peak), m.atActive, mib(m.rssActive), perRun(m.rssActive), perRun(m.peak))
}
