package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/temporalrun"
	"github.com/coorflow/coorflow/workflows"
)

func main() {
	addr := flag.String("temporal", "127.0.0.1:7233", "the Temporal server")
	queue := flag.String("queue", "coorflow", "the workers' task queue")
	db := flag.String("db", "", "the workers' PostgreSQL (postgres://…)")
	file := flag.String("file", "", "the workflow file the workers run (with --demo)")
	runs := flag.Int("runs", 300, "runs to submit, one thread each")
	parallel := flag.Int("parallel", 32, "runs in flight at a time")
	local := flag.Bool("local-steps", true, "run one-task steps as local activities (false: temporalrun.Config.ActivitySteps)")
	label := flag.String("label", "", "a label printed with the figures")
	flag.Parse()
	if err := run(context.Background(), *addr, *queue, *db, *file, *runs, *parallel, *local, *label); err != nil {
		fmt.Fprintln(os.Stderr, "temporal bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, queue, db, file string, runs, parallel int, local bool, label string) error {
	if db == "" || file == "" || runs < 1 || parallel < 1 {
		return fmt.Errorf("give -db, -file, -runs >= 1 and -parallel >= 1")
	}
	wf, err := workflows.Load(file)
	if err != nil {
		return err
	}
	getenv := func(string) string { return "" }
	ms, err := wf.Resolve(ctx, workflows.ModelOptions{Getenv: getenv, Demo: true})
	if err != nil {
		return err
	}
	r, err := wf.Compile(ctx, workflows.Env{Models: ms.Models, Getenv: getenv})
	if err != nil {
		return err
	}
	saver, err := postgres.Open(ctx, db)
	if err != nil {
		return err
	}
	defer saver.Close()
	c, err := client.Dial(client.Options{HostPort: addr, Logger: temporalrun.Logger(os.Stderr)})
	if err != nil {
		return err
	}
	defer c.Close()
	runner, err := temporalrun.New(temporalrun.Config{Client: c, Graph: r, Saver: saver, TaskQueue: queue, ActivitySteps: !local})
	if err != nil {
		return err
	}
	input, err := r.DecodeInput(map[string]json.RawMessage{"topic": json.RawMessage(`"x"`)})
	if err != nil {
		return err
	}
	prefix := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	lat := make([]time.Duration, 0, runs)
	start := time.Now()
	for i := range runs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t0 := time.Now()
			res, err := runner.Invoke(ctx, input, graph.Thread(fmt.Sprintf("%s-%d", prefix, i)))
			if err == nil && res.Status != graph.StatusDone {
				err = fmt.Errorf("run %d ended %s", i, res.Status)
			}
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, time.Since(t0))
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return firstErr
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Printf("%s runs=%d parallel=%d local_steps=%v: %.1f runs/s (%.2fs); latency p50 %s p95 %s; driver CPU %.1fs\n", label, runs, parallel, local,
		float64(runs)/elapsed.Seconds(), elapsed.Seconds(), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*95/100].Round(time.Millisecond), cpu.Seconds())
	return nil
}
