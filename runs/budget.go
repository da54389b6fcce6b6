package runs

import (
	"context"
	"fmt"
	"sync"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs/accounts"
)

// OwnerBudgets hands out the meters of owners' budgets: one per owner and
// process, the parent of the meters of the owner's runs. With Accounts
// the owner's spend and the reservations of its calls in flight are kept
// in the database, so that every process on it (server replicas, several
// servers on one SQLite file, Temporal workers) keeps the one budget;
// without, in memory, for a lone process. Either way an owner's account
// starts from what its recorded runs spent (Spent), the first time it is
// used.
type OwnerBudgets struct {
	accounts *accounts.Accounts
	spent    func(ctx context.Context, owner string) (llm.Spend, error)

	mu     sync.Mutex
	meters map[string]*llm.Meter
}

// NewOwnerBudgets returns the owner budgets kept in a (nil: in
// memory), each started from spent(owner).
func NewOwnerBudgets(a *accounts.Accounts, spent func(ctx context.Context, owner string) (llm.Spend, error)) *OwnerBudgets {
	return &OwnerBudgets{accounts: a, spent: spent, meters: map[string]*llm.Meter{}}
}

// Shared reports whether the budgets are kept in a database.
func (o *OwnerBudgets) Shared() bool { return o.accounts != nil }

// Meter returns the meter of owner's budget b, or nil when b sets no
// limit. An owner's budget never asks: nobody answers for the owner.
func (o *OwnerBudgets) Meter(ctx context.Context, owner string, b llm.Budget) (*llm.Meter, error) {
	if b.IsZero() {
		return nil, nil
	}
	b.Ask = false
	o.mu.Lock()
	defer o.mu.Unlock()
	if m := o.meters[owner]; m != nil {
		if m.Budget() != b {
			m.SetBudget(b)
		}
		return m, nil
	}
	start := func(ctx context.Context) (llm.Spend, error) { return o.spent(ctx, owner) }
	var m *llm.Meter
	if o.accounts != nil {
		m = llm.NewAccountMeter(llm.ScopeOwner, b, o.accounts.Account(accounts.OwnerAccount(owner), start), nil)
	} else {
		spent, err := start(ctx)
		if err != nil {
			return nil, fmt.Errorf("runs: what owner %q spent: %w", owner, err)
		}
		m = llm.NewMeter(llm.ScopeOwner, b, spent, nil)
	}
	o.meters[owner] = m
	return m, nil
}

// Spent reports what owner spent against budget b, and whether that
// leaves no room for a model call (a run of the owner would be refused).
func (o *OwnerBudgets) Spent(ctx context.Context, owner string, b llm.Budget) (llm.Spend, bool, error) {
	m, err := o.Meter(ctx, owner, b)
	if err != nil || m == nil {
		return llm.Spend{}, false, err
	}
	spent, _, err := m.Balance(ctx)
	if err != nil {
		return spent, false, err
	}
	b = m.Budget()
	full := (b.Tokens > 0 && spent.Tokens() >= b.Tokens) || (b.USD > 0 && spent.CostUSD >= b.USD)
	return spent, full, nil
}
