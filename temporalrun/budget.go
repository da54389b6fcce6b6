package temporalrun

import (
	"context"
	"fmt"
	"sync"

	"go.temporal.io/sdk/temporal"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs/accounts"
)

// Budget is what the workers keep a run's model calls within: the run's
// budget, counted in an account of the saver's database from what the
// run's turn spent before it, under its owner's account. The runner takes
// it from the meters of its caller's context (llm.WithMeter): the first of
// scope llm.ScopeRun, and the first of scope llm.ScopeOwner kept in an
// account (runs.OwnerBudgets on the same database, as the server's are).
type Budget struct {
	// Account is the key of the run's account, new for each run a caller
	// starts or continues.
	Account string     `json:"account"`
	Run     llm.Budget `json:"run"`
	// Spent is what the run's turn spent before it: the account starts
	// from it.
	Spent llm.Spend `json:"spent"`
	// Owner is the key of the owner's account, OwnerBudget its budget;
	// "" for none.
	Owner       string     `json:"owner,omitempty"`
	OwnerBudget llm.Budget `json:"owner_budget"`
}

// budgetOf returns the budget the meters of ctx give a run of thread, or
// nil when they set none. The owner's account is read first, so that it
// exists, started from what the caller says the owner spent, before a
// worker uses it.
func budgetOf(ctx context.Context, thread string) (*Budget, error) {
	b := Budget{Account: accounts.RunAccount(thread + "/" + newID())}
	run, owner := false, false
	for m := llm.MeterFrom(ctx); m != nil; m = m.Parent() {
		switch m.Scope() {
		case llm.ScopeRun:
			if !run {
				b.Run, b.Spent, run = m.Budget(), m.Spent(), true
			}
		case llm.ScopeOwner:
			if k, ok := m.Account().(interface{ Key() string }); ok && !owner {
				if _, _, err := m.Balance(ctx); err != nil {
					return nil, fmt.Errorf("temporalrun: the owner's budget: %w", err)
				}
				b.Owner, b.OwnerBudget, owner = k.Key(), m.Budget(), true
			}
		}
	}
	if b.Run.IsZero() && b.OwnerBudget.IsZero() {
		return nil, nil
	}
	return &b, nil
}

// budgets are the meters of a worker's runs: in the accounts of its
// saver's database, or, for a saver in memory (one process), in memory.
type budgets struct {
	accounts *accounts.Accounts

	mu  sync.Mutex
	mem map[string]*llm.Meter // by account key, without accounts
}

// maxMemMeters bounds the meters kept in memory for a saver in memory.
const maxMemMeters = 10_000

// withMeter returns ctx with the meters of b: the step's model calls are
// reserved against the run's and its owner's budgets.
func (g *Graphs) withMeter(ctx context.Context, b *Budget) (context.Context, error) {
	if b == nil {
		return ctx, nil
	}
	bs := &g.budgets
	if bs.accounts == nil {
		return llm.WithMeter(ctx, bs.memMeter(b)), nil
	}
	var owner *llm.Meter
	if b.Owner != "" && !b.OwnerBudget.IsZero() {
		owner = llm.NewAccountMeter(llm.ScopeOwner, b.OwnerBudget, bs.accounts.Account(b.Owner, nil), nil)
	}
	spent := b.Spent
	run := llm.NewAccountMeter(llm.ScopeRun, b.Run, bs.accounts.Account(b.Account,
		func(context.Context) (llm.Spend, error) { return spent, nil }), owner)
	if _, _, err := run.Balance(ctx); err != nil {
		return ctx, temporal.NewApplicationError(fmt.Sprintf("temporalrun: the run's budget: %v", err), errType)
	}
	return llm.WithMeter(ctx, run), nil
}

// memMeter returns the meters of b kept in this process.
func (bs *budgets) memMeter(b *Budget) *llm.Meter {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if m := bs.mem[b.Account]; m != nil {
		return m
	}
	if bs.mem == nil || len(bs.mem) >= maxMemMeters {
		bs.mem = map[string]*llm.Meter{}
	}
	var owner *llm.Meter
	if b.Owner != "" && !b.OwnerBudget.IsZero() {
		if owner = bs.mem[b.Owner]; owner == nil {
			owner = llm.NewMeter(llm.ScopeOwner, b.OwnerBudget, llm.Spend{}, nil)
			bs.mem[b.Owner] = owner
		}
	}
	m := llm.NewMeter(llm.ScopeRun, b.Run, b.Spent, owner)
	bs.mem[b.Account] = m
	return m
}
