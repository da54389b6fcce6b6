package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		d := make([]time.Duration, len(n))
		for i, v := range n {
			d[i] = time.Duration(v) * time.Millisecond
		}
		return d
	}
	s := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	for _, c := range []struct {
		p    float64
		want int
	}{{0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10}, {0.01, 1}} {
		if got := percentile(s, c.p); got != time.Duration(c.want)*time.Millisecond {
			t.Errorf("percentile(1..10ms, %v) = %v, want %dms", c.p, got, c.want)
		}
	}
	if got := percentile(ms(7), 0.99); got != 7*time.Millisecond {
		t.Errorf("percentile of one value = %v, want 7ms", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of none = %v, want 0", got)
	}
}

func TestStatusKB(t *testing.T) {
	status := "Name:\tserverload\nVmHWM:\t   90000 kB\nVmRSS:\t   81234 kB\nThreads:\t7\n"
	if got := statusKB(status, "VmRSS"); got != 81234 {
		t.Errorf("VmRSS = %d, want 81234", got)
	}
	if got := statusKB(status, "VmHWM"); got != 90000 {
		t.Errorf("VmHWM = %d, want 90000", got)
	}
	if got := statusKB(status, "VmSwap"); got != 0 {
		t.Errorf("a missing field = %d, want 0", got)
	}
}

func TestCheckOpen(t *testing.T) {
	ok := options{saver: "sqlite", rate: 10, duration: time.Second}
	if err := checkOpen(ok, 10); err != nil {
		t.Fatalf("checkOpen(%+v): %v", ok, err)
	}
	for _, c := range []struct {
		o    options
		n    int
		want string
	}{
		{options{saver: "memory", rate: 10, duration: time.Second}, 10, `needs -saver sqlite or pg3, not "memory"`},
		{options{saver: "pg3", rate: 0, duration: time.Second}, 0, "must be positive"},
		{options{saver: "pg3", rate: 0.5, duration: time.Second}, 0, "sends no run"},
		{options{saver: "pg3", rate: 1000, duration: time.Minute}, 60000, "sends 60000 runs, more than the 20000 allowed"},
	} {
		err := checkOpen(c.o, c.n)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("checkOpen(%+v, %d) = %v, want an error with %q", c.o, c.n, err, c.want)
		}
	}
}

func TestReportOpenCounts(t *testing.T) {
	res := []arrival{
		{status: http.StatusOK, admission: time.Millisecond, complete: 4 * time.Millisecond, done: true},
		{status: http.StatusOK, admission: 2 * time.Millisecond, complete: 6 * time.Millisecond, done: true},
		{status: http.StatusTooManyRequests, admission: 3 * time.Millisecond},
		{err: http.ErrHandlerTimeout},
	}
	var b bytes.Buffer
	reportOpen(&b, options{saver: "sqlite", nodes: 10, rate: 4, duration: time.Second}, 1, res, time.Second, 2*time.Second,
		memSample{base: 10 << 20, peak: 14 << 20, atActive: 2, rssActive: 12 << 20})
	out := b.String()
	for _, want := range []string{
		"runs: 4 sent, 2 admitted (200), 1 refused (429), 2 done, 1 failed",
		"sustained: 1.0 runs/s done",
		"admission (request to 200/429): p50 2ms  p99 3ms",
		"completion (request to end event): p50 4ms  p99 6ms",
		"2 runs active at most, RSS then 12.0 MiB: 1024 KiB per active run (bound: peak delta / most active, 2048 KiB)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
