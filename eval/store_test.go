package eval_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/eval"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/store"
	spostgres "github.com/coorflow/coorflow/store/postgres"
	ssqlite "github.com/coorflow/coorflow/store/sqlite"
)

func sqliteStore(t *testing.T) store.Store {
	s, err := ssqlite.Open(t.Context(), filepath.Join(t.TempDir(), "evals.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func postgresStore(t *testing.T) store.Store {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_eval_test_")
	s := spostgres.New(pool, spostgres.WithSchema(schema))
	require.NoError(t, s.Migrate(t.Context()))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestAnEvalRunIsKeptAndResumedWithoutRunningFinishedTrials stops an eval
// after 4 of its 10 trials, as Ctrl-C would, and runs it again with its
// id: only the other 6 run, and the eval run read back from the database
// has all 10.
func TestAnEvalRunIsKeptAndResumedWithoutRunningFinishedTrials(t *testing.T) {
	for name, open := range map[string]func(*testing.T) store.Store{"sqlite": sqliteStore, "postgres": postgresStore} {
		t.Run(name, func(t *testing.T) {
			st := eval.NewDocStore(open(t), "default")
			m := scripted.New(scripted.Script{Default: &scripted.Reply{Text: "ok"}})
			f, r := workflow(t, staticModels(t, m))
			ds := dataset(t, f, "many.yaml", manyCases(5))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			cfg := eval.Config{ID: "e-resume", Label: "v1", File: f, Runnable: r, Workflow: "echo", Dataset: ds, Repeats: 2, Concurrency: 1, Store: st,
				Progress: func(p eval.Progress) {
					if p.Done == 4 {
						cancel()
					}
				}}
			_, err := eval.Run(ctx, cfg)
			require.ErrorIs(t, err, context.Canceled)
			kept, err := st.Trials(t.Context(), "e-resume")
			require.NoError(t, err)
			assert.Len(t, kept, 4)
			calls := len(m.Calls())

			cfg.Progress = nil
			res, err := eval.Run(t.Context(), cfg)
			require.NoError(t, err)
			assert.Equal(t, 10, res.Total.Passed)
			assert.Equal(t, 1, res.Resumed)
			assert.Equal(t, 6, len(m.Calls())-calls, "the finished trials were not run again")

			back, err := eval.LoadResult(t.Context(), st, "e-resume")
			require.NoError(t, err)
			assert.Equal(t, eval.RunDone, back.Status)
			assert.Equal(t, "v1", back.Label)
			assert.Equal(t, res.Total.Passed, back.Total.Passed)
			assert.Equal(t, res.Total.Spend, back.Total.Spend)
			runs, err := st.ListRuns(t.Context())
			require.NoError(t, err)
			require.Len(t, runs, 1)
			assert.Equal(t, "e-resume", runs[0].ID)

			other := cfg
			other.Workflow = "another"
			_, err = eval.Run(t.Context(), other)
			assert.ErrorIs(t, err, eval.ErrMismatch)
		})
	}
}
