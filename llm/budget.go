package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
)

// Budget limits what model calls may spend. Zero fields set no limit.
type Budget struct {
	// Tokens caps prompt plus completion tokens.
	Tokens int `json:"tokens,omitempty"`
	// USD caps the cost in US dollars; it needs every model priced.
	USD float64 `json:"usd,omitempty"`
	// Ask pauses the run with a question (graph.Interrupt) when the
	// budget would be exceeded, instead of stopping it.
	Ask bool `json:"ask,omitempty"`
}

// IsZero reports whether b sets no limit.
func (b Budget) IsZero() bool { return b.Tokens <= 0 && b.USD <= 0 }

// String says it: "1000 tokens and $0.5000".
func (b Budget) String() string {
	var parts []string
	if b.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.Tokens))
	}
	if b.USD > 0 {
		parts = append(parts, USD(b.USD))
	}
	if len(parts) == 0 {
		return "no limit"
	}
	return strings.Join(parts, " and ")
}

// The scopes of a budget (BudgetError.Scope).
const (
	ScopeRun   = "run"
	ScopeOwner = "owner"
)

var (
	// ErrBudgetExceeded: a model call would have exceeded a budget; it was
	// not made. The error is a *BudgetError.
	ErrBudgetExceeded = errors.New("llm: budget exceeded")
	// ErrUnpriced: a budget in dollars cannot be kept because a model
	// has no price.
	ErrUnpriced = errors.New("llm: model has no price")
)

// BudgetError says which budget a model call would have exceeded: the
// call was not made.
type BudgetError struct {
	// Scope is ScopeRun or ScopeOwner.
	Scope string
	// Limit is the budget; Spent what was spent against it before the
	// call.
	Limit Budget
	Spent Spend
	// Next is the estimated prompt tokens of the call not made, NextUSD
	// their estimated cost.
	Next    int
	NextUSD float64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("llm: %s budget exceeded: %d tokens and %s spent of a budget of %s; the next model call (about %d prompt tokens) was not made",
		e.Scope, e.Spent.Tokens(), USD(e.Spent.CostUSD), e.Limit, e.Next)
}

// Unwrap makes errors.Is(err, ErrBudgetExceeded) true.
func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

// BudgetQuestion is the payload of the interrupt a run asks when its
// budget says Ask. Answer with a Budget object ({"tokens": N, "usd": X})
// to go on under new limits, "yes" to go on without a limit for the
// rest of the run, or "no" to stop.
type BudgetQuestion struct {
	Question string `json:"question"`
	Scope    string `json:"scope"`
	Limit    Budget `json:"limit"`
	Spent    Spend  `json:"spent"`
	Next     int    `json:"next_prompt_tokens"`
}

// Meter counts what the model calls of a run spend and keeps them within
// its budget and its parent's (an owner's meter shared by the owner's
// runs). Put it in the run's context with WithMeter; Observe then checks
// it before each model call and adds the call after. It is safe for
// concurrent use.
type Meter struct {
	scope  string
	parent *Meter

	mu     sync.Mutex
	budget Budget
	spent  Spend
}

// NewMeter returns a meter of scope (ScopeRun, ScopeOwner) with budget b,
// starting from spent (what earlier runs spent against the same budget),
// under parent (nil for none).
func NewMeter(scope string, b Budget, spent Spend, parent *Meter) *Meter {
	return &Meter{scope: scope, budget: b, spent: spent, parent: parent}
}

// Spent returns what was spent against the meter's budget.
func (m *Meter) Spent() Spend {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.spent
}

// Budget returns the meter's budget.
func (m *Meter) Budget() Budget {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.budget
}

// SetBudget replaces the meter's budget, to raise it.
func (m *Meter) SetBudget(b Budget) {
	m.mu.Lock()
	m.budget = b
	m.mu.Unlock()
}

// Add counts a call in the meter and its parents.
func (m *Meter) Add(c ModelCall) {
	for ; m != nil; m = m.parent {
		m.mu.Lock()
		m.spent.Add(c)
		m.mu.Unlock()
	}
}

// check returns the first budget, from m up, that a call of about next
// prompt tokens costing about nextUSD (priced false: unknown) would
// exceed.
func (m *Meter) check(model string, next int, nextUSD float64, priced bool) (*Meter, error) {
	for ; m != nil; m = m.parent {
		m.mu.Lock()
		b, s := m.budget, m.spent
		m.mu.Unlock()
		if b.USD > 0 && (!priced || s.UnpricedCalls > 0) {
			if model == "" {
				model = "(unnamed model)"
			}
			return m, fmt.Errorf("%w: the %s budget of %s cannot be kept: model %s has no price; give its price in the workflow file (models.TIER.price: input, cached_input, output in dollars per million tokens) or set a budget in tokens",
				ErrUnpriced, m.scope, USD(b.USD), model)
		}
		if (b.Tokens > 0 && s.Tokens()+next > b.Tokens) || (b.USD > 0 && s.CostUSD+nextUSD > b.USD) {
			return m, &BudgetError{Scope: m.scope, Limit: b, Spent: s, Next: next, NextUSD: nextUSD}
		}
	}
	return nil, nil
}

// admit lets a model call of about next prompt tokens go ahead, or asks
// (a run budget that says Ask) or refuses with a *BudgetError.
func (m *Meter) admit(ctx context.Context, model string, next int, nextUSD float64, priced bool) error {
	over, err := m.check(model, next, nextUSD, priced)
	var be *BudgetError
	if err == nil || !errors.As(err, &be) || !over.Budget().Ask {
		return err
	}
	answer, ierr := graph.Interrupt(ctx, BudgetQuestion{
		Question: fmt.Sprintf("The %s budget of %s would be exceeded: %d tokens and %s spent, the next model call needs about %d prompt tokens. "+
			`Go on? Answer {"tokens": N, "usd": X} for a new budget, "yes" for no limit, "no" to stop.`,
			be.Scope, be.Limit, be.Spent.Tokens(), USD(be.Spent.CostUSD), next),
		Scope: be.Scope, Limit: be.Limit, Spent: be.Spent, Next: next,
	})
	if ierr != nil {
		return ierr
	}
	switch a := answer.(type) {
	case map[string]any:
		b := Budget{Ask: true}
		if v, ok := a["tokens"].(float64); ok {
			b.Tokens = int(v)
		}
		if v, ok := a["usd"].(float64); ok {
			b.USD = v
		}
		over.SetBudget(b)
	case bool:
		if !a {
			return err
		}
		over.SetBudget(Budget{})
	case string:
		switch strings.ToLower(strings.TrimSpace(a)) {
		case "yes", "y", "ok", "continue", "go on":
			over.SetBudget(Budget{})
		default:
			return err
		}
	default:
		return err
	}
	_, err = m.check(model, next, nextUSD, priced)
	return err
}

type meterKey struct{}

// WithMeter returns ctx carrying m: the model calls Observe makes under
// it are counted and kept within its budget.
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// MeterFrom returns the meter ctx carries, or nil.
func MeterFrom(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

// priceOf returns the price of the model info names: its own, else the
// built-in one; false when it has none.
func priceOf(info ModelInfo) (Price, bool) {
	if info.Price != nil {
		return *info.Price, true
	}
	return LookupPrice(info.Provider, info.Model)
}

// admitCall checks the meter of ctx, if any, before a call of msgs.
func admitCall(ctx context.Context, info ModelInfo, msgs []llms.MessageContent) error {
	m := MeterFrom(ctx)
	if m == nil {
		return nil
	}
	p, priced := priceOf(info)
	next := EstimateMessages(msgs)
	return m.admit(ctx, info.Model, next, float64(next)*p.Input/1e6, priced)
}
