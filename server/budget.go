package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/runs/accounts"
	runtrace "github.com/coorflow/coorflow/trace"
)

// ownerBudgets keeps the owners' budgets of cfg: in the database of the
// Saver (PostgreSQL or SQLite: the one replicas and Temporal's workers
// share), else of the Recorder's store, shared with every replica, process
// and worker on it; else in memory. Each owner's account starts from what
// its recorded runs spent. Nil without a Recorder.
func ownerBudgets(cfg Config) *runs.OwnerBudgets {
	if cfg.Recorder == nil {
		return nil
	}
	st := cfg.Recorder.Store()
	a := accounts.Of(cfg.Saver)
	if a == nil {
		a = accounts.Of(st)
	}
	return runs.NewOwnerBudgets(a, func(ctx context.Context, owner string) (llm.Spend, error) {
		spent, _, err := runtrace.SpendOf(ctx, st, runtrace.RunQuery{Owner: owner})
		return spent, err
	})
}

// ownerBudget is the budget of an owner: its own in Config.OwnerBudgets,
// else Config.OwnerBudget.
func (s *Server) ownerBudget(owner string) llm.Budget {
	if b, ok := s.cfg.OwnerBudgets[owner]; ok {
		return b
	}
	return s.cfg.OwnerBudget
}

// ownerMeter returns the meter of owner, or nil when the owner has no
// budget.
func (s *Server) ownerMeter(ctx context.Context, owner string) (*llm.Meter, error) {
	if s.owners == nil {
		return nil, nil
	}
	m, err := s.owners.Meter(ctx, owner, s.ownerBudget(owner))
	if err != nil {
		return nil, fmt.Errorf("server: the budget of owner %q: %w", owner, err)
	}
	return m, nil
}

// budgetQuota refuses a run of an owner whose budget is spent.
func (s *Server) budgetQuota(ctx context.Context, owner string) *apiError {
	if s.owners == nil {
		return nil
	}
	b := s.ownerBudget(owner)
	spent, full, err := s.owners.Spent(ctx, owner, b)
	if err != nil {
		s.log.ErrorContext(ctx, "server: owner budget", "owner", owner, "err", err)
		return internalError(requestID(ctx))
	}
	if full {
		return errorf(http.StatusPaymentRequired, CodeBudgetExceeded,
			"owner %q has spent its budget of %s (%d tokens, %s): ask the operator to raise it", owner, b, spent.Tokens(), llm.USD(spent.CostUSD))
	}
	return nil
}

// meterRun returns the run's meter: the run's budget
// (the request's, else the workflow's in Config.Budgets) under the
// owner's. A run that continues or resumes a thread starts from what the
// thread's turn spent, as recorded (from nothing without a Recorder).
func (s *Server) meterRun(ru *run) (*llm.Meter, error) {
	owner, err := s.ownerMeter(ru.ctx, ru.owner)
	if err != nil {
		return nil, err
	}
	b := s.cfg.Budgets[ru.workflow]
	if ru.budget != nil {
		b = *ru.budget
	}
	var spent llm.Spend
	if ru.input == nil && !b.IsZero() && s.cfg.Recorder != nil {
		if spent, err = runtrace.TurnSpend(ru.ctx, s.cfg.Recorder.Store(), ru.owner, ru.thread); err != nil {
			return nil, fmt.Errorf("server: what thread %q spent: %w", ru.thread, err)
		}
	}
	_, turn, own := runs.Meter(ru.ctx, b, spent, owner)
	ru.mu.Lock()
	ru.meter, ru.turn = own, turn
	ru.mu.Unlock()
	return own, nil
}

// handleUsage answers GET /v1/usage: what the caller's recorded runs
// spent, and its budget.
func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	owner := ownerFrom(r.Context())
	if s.cfg.Recorder == nil {
		writeError(w, errorf(http.StatusNotFound, CodeNotFound, "the server records no runs, so it keeps no usage: start it with a recorder"))
		return
	}
	spent, runs, err := runtrace.SpendOf(r.Context(), s.cfg.Recorder.Store(), runtrace.RunQuery{Owner: owner})
	if err != nil {
		s.log.ErrorContext(r.Context(), "server: usage", "owner", owner, "err", err)
		writeError(w, internalError(requestID(r.Context())))
		return
	}
	out := Usage{Owner: owner, Runs: runs, Usage: spent}
	if b := s.ownerBudget(owner); !b.IsZero() {
		out.Budget = &b
	}
	writeJSON(w, http.StatusOK, out)
}

// Usage is the answer of GET /v1/usage.
type Usage struct {
	Owner string `json:"owner"`
	// Runs counts the owner's recorded runs (the most recent 100,000 at
	// most); Usage sums their model calls.
	Runs  int       `json:"runs"`
	Usage llm.Spend `json:"usage"`
	// Budget is the owner's budget across its runs, if it has one.
	Budget *llm.Budget `json:"budget,omitempty"`
}

// checkBudgets refuses budgets the server cannot keep.
func checkBudgets(cfg Config) error {
	owners := !cfg.OwnerBudget.IsZero()
	for owner, b := range cfg.OwnerBudgets {
		if b.Tokens < 0 || b.USD < 0 {
			return fmt.Errorf("server: Config.OwnerBudgets[%q]: a budget cannot be negative", owner)
		}
		owners = owners || !b.IsZero()
	}
	if cfg.OwnerBudget.Tokens < 0 || cfg.OwnerBudget.USD < 0 {
		return errors.New("server: Config.OwnerBudget: a budget cannot be negative")
	}
	if owners && cfg.Recorder == nil {
		return errors.New("server: owner budgets count what the owner's recorded runs spent: set Config.Recorder")
	}
	for name, b := range cfg.Budgets {
		if b.Tokens < 0 || b.USD < 0 {
			return fmt.Errorf("server: Config.Budgets[%q]: a budget cannot be negative", name)
		}
	}
	return nil
}
