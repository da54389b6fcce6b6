package postgres_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/postgres"
)

// limits is a pgx tracer that notes the LIMIT of each page of frames the
// store asks the database for.
type limits struct {
	mu   sync.Mutex
	asks []int
}

var limitArg = regexp.MustCompile(`LIMIT \$(\d+)`)

func (l *limits) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !strings.HasPrefix(data.SQL, "SELECT id, name, frame, path, meta") {
		return ctx
	}
	if m := limitArg.FindStringSubmatch(data.SQL); m != nil {
		i, _ := strconv.Atoi(m[1])
		if n, ok := data.Args[i-1].(int); ok {
			l.mu.Lock()
			l.asks = append(l.asks, n)
			l.mu.Unlock()
		}
	}
	return ctx
}

func (*limits) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the limits asked since the last call, summed.
func (l *limits) take() (asked, queries int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.asks {
		asked += n
	}
	queries = len(l.asks)
	l.asks = nil
	return asked, queries
}

// A page of large events asks the database for a few frames more than it
// holds, not for a page's limit (10,000): each page of a run read page by
// page would read the rest of the run again. A page comes in three
// queries at most.
func TestAPageAsksTheDatabaseForAboutTheFramesItHolds(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	require.NoError(t, err)
	meter := &limits{}
	cfg.ConnConfig.Tracer = meter
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	pgtest.Pool(t) // skips without a server
	s := postgres.New(pool, postgres.WithSchema(pgtest.Schema(t, pool, "coorflow_trace_test_")))
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	ctx := t.Context()
	require.NoError(t, s.CreateRun(ctx, trace.RunInfo{ID: "big", Status: trace.StatusRunning, Start: trace.StartInput, StartedAt: time.Now()}))
	body := json.RawMessage(`"` + strings.Repeat("x", 20<<10) + `"`)
	var evs []trace.Event
	for i := range int64(600) {
		e := trace.Event{RunID: "big", Seq: i + 1, Kind: "model_call", Path: "wf/a", Time: time.Now(), Payload: json.RawMessage(`{"model":"m"}`), Hash: "h"}
		if i < 300 { // the first 300 with bodies of 40 KiB
			e.Request, e.Response = body, body
		}
		evs = append(evs, e)
	}
	require.NoError(t, s.AppendEvents(ctx, evs))
	meter.take()

	// What a page asks beyond its events: the first answer's 256 frames,
	// or half again of those the bytes left would hold, and 16.
	over := func(n int) int { return n*3/2 + 256 + 16 }
	for _, q := range []trace.EventQuery{
		{Kinds: []string{"model_call"}, Bodies: true, MaxBytes: 1 << 20},
		{Path: "wf/a", Bodies: true, MaxBytes: 1 << 20, Until: 400},
		{Bodies: true, MaxBytes: 64 << 10},
		{MaxBytes: 64 << 10},
		{MaxBytes: 24 << 10}, // about 340 events a page, without bodies
	} {
		var got []int64
		for {
			page, err := s.Events(ctx, "big", q)
			require.NoError(t, err)
			asked, queries := meter.take()
			assert.LessOrEqual(t, queries, 3, "%+v after %d", q, q.After)
			if len(page) == 0 {
				break
			}
			if last := page[len(page)-1].Seq; last < 600 && (q.Until == 0 || last < q.Until) {
				// (The last page asks for frames the stream does not
				// have: the database reads none.)
				assert.LessOrEqual(t, asked, over(len(page)), "%+v after %d: a page of %d events", q, q.After, len(page))
			}
			for _, e := range page {
				got = append(got, e.Seq)
			}
			q.After = page[len(page)-1].Seq
		}
		want := 600
		if q.Until > 0 {
			want = int(q.Until)
		}
		require.Len(t, got, want, "%+v: every event once", q)
		assert.Equal(t, int64(want), got[len(got)-1])
	}
}
