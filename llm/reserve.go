package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
)

// How much of a budget a model call reserves before it is sent. A call is
// reserved its estimated prompt (EstimateMessages plus its tools'
// definitions) and its completion: its max_tokens when it sets one;
// otherwise CompletionAllowance, cut to what the tightest budget has left
// after the prompt and what the calls in flight reserved (but never below
// MinCompletion), and Observe sends the call with that max_tokens. So a
// budget is exceeded only by what a provider counts beyond the estimate of
// the prompt, or by a completion longer than the max_tokens it was sent
// (a provider that ignores max_tokens): at most one such completion per
// call in flight.
const (
	// CompletionAllowance is the completion reserved for, and the
	// max_tokens sent with, a call under a budget that sets none.
	CompletionAllowance = 8192
	// MinCompletion is the fewest completion tokens such a call is sent
	// with: a budget with less room than its prompt and MinCompletion
	// stops (or asks) before the call.
	MinCompletion = 16
)

// Reserved is what the calls in flight reserved of a budget.
type Reserved struct {
	Calls  int     `json:"calls"`
	Tokens int     `json:"tokens"`
	USD    float64 `json:"usd"`
}

// A Claim is what a model call asks of a budget before it is sent.
type Claim struct {
	// Model names the model, for errors.
	Model string
	// Prompt is the estimated prompt tokens, PromptUSD their cost at the
	// model's input price.
	Prompt    int
	PromptUSD float64
	// Completion is the completion tokens asked for: the call's max_tokens
	// when Fixed, else CompletionAllowance, which a budget with less room
	// may cut down to MinCompletion.
	Completion int
	Fixed      bool
	// OutputUSD is the price of one completion token.
	OutputUSD float64
	// Priced is false for a model without a price: a budget in dollars
	// refuses its calls (ErrUnpriced).
	Priced bool
}

// Verdict is what a budget says of a Claim.
type Verdict int

// The verdicts of Claim.Fit.
const (
	// Fits: reserve the claim (with the completion Fit granted).
	Fits Verdict = iota
	// Waits: the claim fits what was spent, but not beside what the calls
	// in flight reserved: try again when one of them settles.
	Waits
	// Over: the claim does not fit what was spent: the call is not made.
	Over
)

// least is the fewest completion tokens the claim can be sent with.
func (c Claim) least() int {
	if c.Fixed {
		return c.Completion
	}
	return min(c.Completion, MinCompletion)
}

// Fit says whether c fits budget b beside spent and reserved, and with how
// many completion tokens. It is the one rule every budget applies, in
// memory or in a database (Account).
func (c Claim) Fit(b Budget, spent Spend, reserved Reserved) (completion int, v Verdict) {
	grant, least := c.Completion, c.least()
	v = Fits
	if b.Tokens > 0 {
		if spent.Tokens()+c.Prompt+least > b.Tokens {
			return 0, Over
		}
		room := b.Tokens - spent.Tokens() - reserved.Tokens - c.Prompt
		switch {
		case room < least:
			v = Waits
		case !c.Fixed:
			grant = min(grant, room)
		}
	}
	if b.USD > 0 {
		const eps = 1e-12
		if spent.CostUSD+c.PromptUSD+float64(least)*c.OutputUSD > b.USD+eps {
			return 0, Over
		}
		left := b.USD - spent.CostUSD - reserved.USD - c.PromptUSD
		switch {
		case left+eps < float64(least)*c.OutputUSD:
			v = Waits
		case !c.Fixed && c.OutputUSD > 0:
			grant = min(grant, int((left+eps)/c.OutputUSD))
		}
	}
	if v != Fits {
		return 0, v
	}
	return grant, Fits
}

// A Hold is a reservation an Account took.
type Hold struct {
	// ID names it in the account.
	ID string `json:"id"`
	// Tokens and USD are what it reserved; Completion the completion
	// tokens it granted.
	Tokens     int     `json:"tokens"`
	USD        float64 `json:"usd"`
	Completion int     `json:"completion"`
}

// An Account keeps a budget's spend and the reservations of the calls in
// flight where every process that spends against the budget sees them (a
// database: runs.Accounts). Its methods are atomic where it keeps them.
type Account interface {
	// Reserve applies Claim.Fit to c against b (or the budget the account
	// keeps, see BudgetKeeper) beside what the account spent and
	// reserved and, when it fits, reserves it, in one atomic step.
	Reserve(ctx context.Context, b Budget, c Claim) (Reservation, error)
	// Settle gives back h and counts spent, what the call spent (nothing
	// for a call that failed).
	Settle(ctx context.Context, h Hold, spent Spend) error
	// Balance returns what was spent and what is reserved.
	Balance(ctx context.Context) (Spend, Reserved, error)
}

// Reservation is what Account.Reserve says.
type Reservation struct {
	// Hold is the reservation, when Verdict is Fits.
	Hold    Hold
	Verdict Verdict
	// Spent is what was spent, and Budget the budget applied.
	Spent  Spend
	Budget Budget
}

// A BudgetKeeper is an Account that keeps a budget of its own once one is
// set: a budget raised by the answer to a budget's question (Ask) then
// holds for every meter of the account, in every process.
type BudgetKeeper interface {
	SetBudget(ctx context.Context, b Budget) error
}

// settleTimeout bounds the settling of a call in an Account after the
// call's own context ended.
const settleTimeout = 30 * time.Second

// pollAccount bounds the wait before an Account that said Waits is asked
// again (it cannot tell when another process's call settles).
const pollAccount = 10 * time.Millisecond

// A reservation is what a call holds of its meters while it is in flight.
type reservation struct {
	meters     []*Meter // the chain, bottom first
	holds      []Hold   // of the meters with an Account, by index in meters
	tokens     int
	usd        float64
	completion int // granted; 0 when no meter has a budget
}

// chain returns m and its parents, bottom first.
func (m *Meter) chain() []*Meter {
	var out []*Meter
	for ; m != nil; m = m.parent {
		out = append(out, m)
	}
	return out
}

// limited reports whether any meter of the chain has a budget.
func limited(chain []*Meter) bool {
	for _, x := range chain {
		if !x.Budget().IsZero() {
			return true
		}
	}
	return false
}

// reserve reserves claim c against m and its parents in one step: the
// meters in memory under their locks (taken bottom first, the one order
// every call takes them in), the accounts while those are held. A claim
// that fits only once calls in flight settle waits for them (or ctx); one
// that does not fit returns a *BudgetError, or asks when the budget says
// Ask.
func (m *Meter) reserve(ctx context.Context, c Claim) (*reservation, error) {
	chain := m.chain()
	for {
		r, over, wait, err := tryReserve(ctx, chain, c)
		switch {
		case err != nil:
			return nil, err
		case r != nil:
			return r, nil
		case over != nil:
			if err := over.m.ask(ctx, over.err); err != nil {
				return nil, err
			}
		default:
			if err := wait.wait(ctx); err != nil {
				return nil, fmt.Errorf("llm: waiting for room in the %s budget: %w", wait.m.scope, err)
			}
		}
	}
}

// overBudget is the meter a claim does not fit, with the error saying so.
type overBudget struct {
	m   *Meter
	err *BudgetError
}

// waitRoom is the meter a claim waits for room in: changed is its channel
// as it was when the claim did not fit (nil for an Account).
type waitRoom struct {
	m       *Meter
	changed <-chan struct{}
}

func tryReserve(ctx context.Context, chain []*Meter, c Claim) (*reservation, *overBudget, *waitRoom, error) {
	for _, x := range chain {
		x.mu.Lock()
	}
	defer func() {
		for _, x := range chain {
			x.mu.Unlock()
		}
	}()
	grant := c.Completion
	for _, x := range chain {
		if x.account != nil {
			continue
		}
		if err := x.priced(c, x.spent); err != nil {
			return nil, nil, nil, err
		}
		g, v := c.Fit(x.budget, x.spent, x.reserved)
		switch v {
		case Over:
			return nil, x.over(c, x.spent), nil, nil
		case Waits:
			return nil, nil, &waitRoom{m: x, changed: x.changed}, nil
		}
		grant = min(grant, g)
	}
	r := &reservation{meters: chain, holds: make([]Hold, len(chain))}
	cc := c
	cc.Completion = grant
	for i, x := range chain {
		if x.account == nil {
			continue
		}
		if err := x.priced(c, Spend{}); err != nil {
			return nil, nil, nil, errors.Join(err, r.release(ctx))
		}
		res, err := x.account.Reserve(ctx, x.budget, cc)
		h, v, spent := res.Hold, res.Verdict, res.Spent
		if err == nil {
			x.budget = res.Budget
		}
		if err == nil && v == Fits {
			x.spent = spent
			r.holds[i] = h
			cc.Completion = min(cc.Completion, h.Completion)
			continue
		}
		if err != nil {
			err = fmt.Errorf("llm: reserve a model call in the %s budget: %w", x.scope, err)
		}
		if rerr := r.release(ctx); rerr != nil || err != nil {
			return nil, nil, nil, errors.Join(err, rerr)
		}
		if v == Over {
			x.spent = spent
			return nil, x.over(cc, spent), nil, nil
		}
		return nil, nil, &waitRoom{m: x}, nil
	}
	r.completion = cc.Completion
	r.tokens = c.Prompt + r.completion
	r.usd = c.PromptUSD + float64(r.completion)*c.OutputUSD
	for _, x := range chain {
		if x.account == nil {
			x.reserved.Calls++
			x.reserved.Tokens += r.tokens
			x.reserved.USD += r.usd
		}
	}
	return r, nil, nil, nil
}

// priced refuses a call that a budget in dollars cannot price.
func (m *Meter) priced(c Claim, spent Spend) error {
	if m.budget.USD <= 0 || (c.Priced && spent.UnpricedCalls == 0) {
		return nil
	}
	model := c.Model
	if model == "" {
		model = "(unnamed model)"
	}
	return fmt.Errorf("%w: the %s budget of %s cannot be kept: model %s has no price; give its price in the workflow file (models.TIER.price: input, cached_input, output in dollars per million tokens) or set a budget in tokens",
		ErrUnpriced, m.scope, USD(m.budget.USD), model)
}

// over is the error of a claim that does not fit m's budget. m.mu is held.
func (m *Meter) over(c Claim, spent Spend) *overBudget {
	least := c.least()
	return &overBudget{m: m, err: &BudgetError{Scope: m.scope, Limit: m.budget, Spent: spent, Next: c.Prompt, NextUSD: c.PromptUSD,
		Completion: least, CompletionUSD: float64(least) * c.OutputUSD}}
}

// wait waits until the meter gives back a reservation (in memory), or a
// while (an Account), or ctx ends.
func (w *waitRoom) wait(ctx context.Context) error {
	changed := w.changed
	if changed == nil {
		t := time.NewTimer(pollAccount)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case <-changed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// settle gives the reservation back and counts what the call spent in
// every meter of its chain.
func (r *reservation) settle(ctx context.Context, spent Spend) error {
	var errs []error
	for i, x := range r.meters {
		if x.account != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
			err := x.account.Settle(sctx, r.holds[i], spent)
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("llm: settle a model call in the %s budget: %w", x.scope, err))
			}
			x.mu.Lock()
			x.spent.Merge(spent)
			x.mu.Unlock()
			continue
		}
		x.mu.Lock()
		x.reserved.Calls--
		x.reserved.Tokens -= r.tokens
		x.reserved.USD -= r.usd
		x.spent.Merge(spent)
		x.wake()
		x.mu.Unlock()
	}
	return errors.Join(errs...)
}

// release gives back the holds taken so far by an unfinished tryReserve.
func (r *reservation) release(ctx context.Context) error {
	var errs []error
	for i, x := range r.meters {
		if x.account != nil && r.holds[i].ID != "" {
			if err := x.account.Settle(context.WithoutCancel(ctx), r.holds[i], Spend{}); err != nil {
				errs = append(errs, fmt.Errorf("llm: give back a reservation in the %s budget: %w", x.scope, err))
			}
		}
	}
	return errors.Join(errs...)
}

// ask puts the question of a run budget that says Ask, and applies the
// answer: nil to try again under the new budget, else the error that
// stops the call.
func (m *Meter) ask(ctx context.Context, be *BudgetError) error {
	if !be.Limit.Ask {
		return be
	}
	answer, err := graph.Interrupt(ctx, BudgetQuestion{
		Question: fmt.Sprintf("The %s budget of %s would be exceeded: %d tokens and %s spent, the next model call needs about %d prompt tokens. "+
			`Go on? Answer {"tokens": N, "usd": X} for a new budget, "yes" for no limit, "no" to stop.`,
			be.Scope, be.Limit, be.Spent.Tokens(), USD(be.Spent.CostUSD), be.Next),
		Scope: be.Scope, Limit: be.Limit, Spent: be.Spent, Next: be.Next,
	})
	if err != nil {
		return err
	}
	var b Budget
	switch a := answer.(type) {
	case map[string]any:
		b = Budget{Ask: true}
		if v, ok := a["tokens"].(float64); ok {
			b.Tokens = int(v)
		}
		if v, ok := a["usd"].(float64); ok {
			b.USD = v
		}
	case bool:
		if !a {
			return be
		}
	case string:
		switch strings.ToLower(strings.TrimSpace(a)) {
		case "yes", "y", "ok", "continue", "go on":
		default:
			return be
		}
	default:
		return be
	}
	m.SetBudget(b)
	if k, ok := m.account.(BudgetKeeper); ok {
		if err := k.SetBudget(ctx, b); err != nil {
			return fmt.Errorf("llm: keep the %s budget answered: %w", m.scope, err)
		}
	}
	return nil
}

// reserveCall reserves a call of msgs with options co against the meter
// of ctx, if any; nil when there is none.
func reserveCall(ctx context.Context, info ModelInfo, msgs []llms.MessageContent, co llms.CallOptions) (*reservation, error) {
	m := MeterFrom(ctx)
	if m == nil {
		return nil, nil
	}
	p, priced := priceOf(info)
	prompt := EstimateMessages(msgs) + estimateTools(co.Tools)
	c := Claim{Model: info.Model, Prompt: prompt, PromptUSD: float64(prompt) * p.Input / 1e6,
		Completion: CompletionAllowance, OutputUSD: p.Output / 1e6, Priced: priced}
	if co.MaxTokens > 0 {
		c.Completion, c.Fixed = co.MaxTokens, true
	}
	r, err := m.reserve(ctx, c)
	if err != nil {
		return nil, err
	}
	if c.Fixed || !limited(r.meters) {
		r.completion = 0 // the call goes as it was asked
	}
	return r, nil
}

// estimateTools estimates the prompt tokens the definitions of tools take.
func estimateTools(tools []llms.Tool) int {
	if len(tools) == 0 {
		return 0
	}
	data, err := json.Marshal(tools)
	if err != nil {
		return 0
	}
	return EstimateTokens(string(data))
}
