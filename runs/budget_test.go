package runs_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/internal/sqlitedb"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/runs/accounts"
)

// spendInParallel makes calls model calls at once, spread over the owner
// budgets of several processes (one *runs.OwnerBudgets each), and returns
// how many the budget refused.
func spendInParallel(t *testing.T, procs []*runs.OwnerBudgets, budget llm.Budget, calls int) int {
	t.Helper()
	// The latency keeps calls in flight together, as a provider does.
	model := llm.Observe(scripted.New(scripted.Script{Default: &scripted.Reply{Text: strings.Repeat("word ", 40)},
		Latency: 2 * time.Millisecond}), llm.ModelInfo{Model: "scripted"})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		refused int
	)
	for i := range calls {
		wg.Go(func() {
			ctx := t.Context()
			owner, err := procs[i%len(procs)].Meter(ctx, "ann", budget)
			if !assert.NoError(t, err) {
				return
			}
			run := llm.NewMeter(llm.ScopeRun, llm.Budget{}, llm.Spend{}, owner)
			_, err = model.GenerateContent(llm.WithMeter(ctx, run),
				[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "summarise the report")}, llms.WithMaxTokens(60))
			var be *llm.BudgetError
			switch {
			case errors.As(err, &be):
				assert.Equal(t, llm.ScopeOwner, be.Scope)
				mu.Lock()
				refused++
				mu.Unlock()
			default:
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	return refused
}

// checkOwnerBudget fires 120 parallel calls at the processes and checks
// that the owner's account ends within its budget, with every
// reservation given back, having started from what the owner spent
// before.
func checkOwnerBudget(t *testing.T, procs []*runs.OwnerBudgets) {
	t.Helper()
	budget := llm.Budget{Tokens: 3000}
	refused := spendInParallel(t, procs, budget, 120)
	assert.Positive(t, refused, "the budget stopped some calls")
	m, err := procs[0].Meter(t.Context(), "ann", budget)
	require.NoError(t, err)
	spent, reserved, err := m.Balance(t.Context())
	require.NoError(t, err)
	t.Logf("spent %d of %d tokens (%d calls made, %d refused, 120 fired at once)", spent.Tokens(), budget.Tokens, spent.Calls-1, refused)
	assert.LessOrEqual(t, spent.Tokens(), budget.Tokens, "spent %s", spent)
	assert.Greater(t, spent.Tokens(), budget.Tokens-200, "the budget was used: %s", spent)
	prompt := llm.EstimateMessages([]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "summarise the report")})
	assert.Equal(t, 500+(spent.Calls-1)*prompt, spent.PromptTokens, "the account started from the owner's recorded spend, once")
	assert.Equal(t, llm.Reserved{}, reserved, "every reservation was given back")
}

// recorded is what the owner's recorded runs spent before the account
// existed.
func recorded(context.Context, string) (llm.Spend, error) {
	return llm.Spend{Calls: 1, PromptTokens: 500}, nil
}

// TestOwnerBudgetHoldsAcrossSQLiteProcesses: one and three processes on
// one SQLite file (a database handle each) spend no more than the owner's
// budget together with 120 parallel calls. Before, each process kept its
// own meter started from the recorded spend, so each could spend the
// whole budget: 1,600 spent of 1,000 measured from outside.
func TestOwnerBudgetHoldsAcrossSQLiteProcesses(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d processes", n), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "budget.db")
			var procs []*runs.OwnerBudgets
			for range n {
				db, err := sqlitedb.Open(path, sqlitedb.Options{})
				require.NoError(t, err)
				t.Cleanup(func() { _ = db.Close() })
				procs = append(procs, runs.NewOwnerBudgets(accounts.SQLite(db), recorded))
			}
			checkOwnerBudget(t, procs)
		})
	}
}

// TestOwnerBudgetHoldsAcrossPostgresReplicas: one and three replicas (a
// pool each) on one PostgreSQL database spend no more than the owner's
// budget together with 120 parallel calls (before: a 1,000-token budget
// ended at 10,000 spent).
func TestOwnerBudgetHoldsAcrossPostgresReplicas(t *testing.T) {
	admin := pgtest.Pool(t)
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) {
			schema := pgtest.Schema(t, admin, "budget_")
			var procs []*runs.OwnerBudgets
			for range n {
				pool, err := pgxpool.New(t.Context(), pgtest.URL())
				require.NoError(t, err)
				t.Cleanup(pool.Close)
				procs = append(procs, runs.NewOwnerBudgets(accounts.Postgres(pool, schema), recorded))
			}
			checkOwnerBudget(t, procs)
		})
	}
}

// TestOwnerBudgetInMemory: a lone process keeps the owner's budget in
// memory, under the same rule.
func TestOwnerBudgetInMemory(t *testing.T) {
	o := runs.NewOwnerBudgets(nil, recorded)
	assert.False(t, o.Shared())
	checkOwnerBudget(t, []*runs.OwnerBudgets{o, o})
}

// TestAccountsOf: a backend without a database keeps no accounts.
func TestAccountsOf(t *testing.T) {
	assert.Nil(t, accounts.Of(struct{}{}))
}
