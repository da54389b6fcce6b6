package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

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
	// Completion is the fewest completion tokens the call would have been
	// sent with (its max_tokens, or MinCompletion when it set none), and
	// CompletionUSD their cost: a budget that goes on must leave room
	// for Next and Completion.
	Completion    int
	CompletionUSD float64
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

// OneBudgetQuestion reports whether the pending interrupts ins are all the
// same budget question: with on_exceed: ask, every agent the budget
// blocks in one step asks, but the answer — a new budget for the run, or
// stop — is one decision, so hosts ask it once and give the answer to all
// of them (AnswerAll).
func OneBudgetQuestion(ins []graph.InterruptInfo) bool {
	if len(ins) < 2 {
		return false
	}
	scope := ""
	for i, in := range ins {
		q, err := graph.InterruptPayload[BudgetQuestion](in)
		if err != nil || q.Scope == "" || q.Question == "" || (i > 0 && q.Scope != scope) {
			return false
		}
		scope = q.Scope
	}
	return true
}

// AnswerAll answers every interrupt of ins with v.
func AnswerAll(ins []graph.InterruptInfo, v any) graph.Option {
	each := make(map[string]any, len(ins))
	for _, in := range ins {
		each[in.ID] = v
	}
	return graph.ResumeEach(each)
}

// Meter counts what the model calls of a run spend and keeps them within
// its budget and its parents' (an owner's meter shared by the owner's
// runs). Put it in the run's context with WithMeter; Observe then
// reserves each call against the meter and all its parents before the
// call is sent, and settles the reservation with the call's usage after
// it (reserve.go). A meter keeps its spend in memory (NewMeter), or in an
// Account that several processes share (NewAccountMeter). It is safe for
// concurrent use.
type Meter struct {
	scope   string
	parent  *Meter
	account Account // nil: in memory

	mu       sync.Mutex
	budget   Budget
	spent    Spend
	reserved Reserved
	// changed is closed, and replaced, when a reservation is given back:
	// calls that wait for room wait on it.
	changed chan struct{}
}

// NewMeter returns a meter of scope (ScopeRun, ScopeOwner) with budget b,
// kept in memory, starting from spent (what earlier runs spent against
// the same budget), under parent (nil for none).
func NewMeter(scope string, b Budget, spent Spend, parent *Meter) *Meter {
	return &Meter{scope: scope, budget: b, spent: spent, parent: parent, changed: make(chan struct{})}
}

// NewAccountMeter returns a meter of scope with budget b whose spend and
// reservations are kept in a, under parent (nil for none): the meters of
// one account in several processes share its budget. Its Spent is what
// it saw of the account at its last reservation plus what its own calls
// spent since; Balance reads the account.
func NewAccountMeter(scope string, b Budget, a Account, parent *Meter) *Meter {
	m := NewMeter(scope, b, Spend{}, parent)
	m.account = a
	return m
}

// Scope returns the meter's scope; Parent its parent (nil for none);
// Account its Account (nil for a meter kept in memory).
func (m *Meter) Scope() string    { return m.scope }
func (m *Meter) Parent() *Meter   { return m.parent }
func (m *Meter) Account() Account { return m.account }

// Spent returns what was spent against the meter's budget (for a meter
// of an Account, as it last saw it: see Balance).
func (m *Meter) Spent() Spend {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.spent
}

// Balance returns what was spent against the meter's budget and what the
// calls in flight reserved, reading the Account of a meter that has one.
func (m *Meter) Balance(ctx context.Context) (Spend, Reserved, error) {
	if m.account != nil {
		return m.account.Balance(ctx)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.spent, m.reserved, nil
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
	m.wake()
	m.mu.Unlock()
}

// Add counts a call made elsewhere (by a Temporal worker, say) in the
// meter and its parents kept in memory; a meter of an Account leaves it to
// the process that made the call, which counted it there.
func (m *Meter) Add(c ModelCall) {
	for ; m != nil; m = m.parent {
		if m.account != nil {
			continue
		}
		m.mu.Lock()
		m.spent.Add(c)
		m.mu.Unlock()
	}
}

// wake tells the calls waiting for room to look again. m.mu is held.
func (m *Meter) wake() {
	close(m.changed)
	m.changed = make(chan struct{})
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
