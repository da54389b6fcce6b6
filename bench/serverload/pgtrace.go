package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

type pgTracer struct {
	mu sync.Mutex
	m  map[string]*stat
}

type stat struct {
	n   int
	dur time.Duration
}

type traceKey struct{}
type traceVal struct {
	sql   string
	start time.Time
}

func (t *pgTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, traceKey{}, traceVal{d.SQL, time.Now()})
}

func (t *pgTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	v, _ := ctx.Value(traceKey{}).(traceVal)
	k := strings.Join(strings.Fields(v.sql), " ")
	if len(k) > 90 {
		k = k[:90]
	}
	t.mu.Lock()
	s := t.m[k]
	if s == nil {
		s = &stat{}
		t.m[k] = s
	}
	s.n++
	s.dur += time.Since(v.start)
	t.mu.Unlock()
}

func (t *pgTracer) dump(path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.m))
	for k := range t.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return t.m[keys[i]].dur > t.m[keys[j]].dur })
	var b strings.Builder
	for _, k := range keys {
		s := t.m[k]
		fmt.Fprintf(&b, "%7d %10.1fms %8.2fms  %s\n", s.n, float64(s.dur.Microseconds())/1000, float64(s.dur.Microseconds())/1000/float64(s.n), k)
	}
	_ = os.WriteFile(path, []byte(b.String()), 0o644)
}
