package eval

import (
	"fmt"
	"math"
	"strings"

	"github.com/coorflow/coorflow/llm"
)

// The changes of a case between two eval runs.
const (
	Better = "better"
	Worse  = "worse"
	Same   = "same"
	New    = "new"  // only in B
	Gone   = "gone" // only in A
)

// Comparison is what changed from eval run A to eval run B.
type Comparison struct {
	A, B  *Result
	Cases []CaseChange `json:"cases"`
	// Better and Worse count the cases that got better and worse
	// (Regressions is Worse).
	Better, Worse int
}

// CaseChange is one case in both runs.
type CaseChange struct {
	Case   string   `json:"case"`
	Change string   `json:"change"`
	A      *Summary `json:"a,omitempty"`
	B      *Summary `json:"b,omitempty"`
	// Judge is a pairwise judge's verdict on the two answers, when asked.
	Judge *PairVerdict `json:"judge,omitempty"`
}

// scoreEpsilon is the least change of a mean score that counts.
const scoreEpsilon = 1e-6

// Compare compares eval run b with a, case by case: a case got better
// when its pass rate rose (or, the same, its mean score), worse when it
// fell.
func Compare(a, b *Result) *Comparison {
	c := &Comparison{A: a, B: b}
	inA := map[string]*Summary{}
	for i := range a.Cases {
		inA[a.Cases[i].Case] = &a.Cases[i].Summary
	}
	seen := map[string]bool{}
	for i := range b.Cases {
		cb := &b.Cases[i]
		seen[cb.Case] = true
		ch := CaseChange{Case: cb.Case, A: inA[cb.Case], B: &cb.Summary}
		switch {
		case ch.A == nil:
			ch.Change = New
		default:
			ch.Change = change(*ch.A, cb.Summary)
		}
		c.add(ch)
	}
	for i := range a.Cases {
		if !seen[a.Cases[i].Case] {
			c.add(CaseChange{Case: a.Cases[i].Case, Change: Gone, A: &a.Cases[i].Summary})
		}
	}
	return c
}

func (c *Comparison) add(ch CaseChange) {
	switch ch.Change {
	case Better:
		c.Better++
	case Worse:
		c.Worse++
	}
	c.Cases = append(c.Cases, ch)
}

func change(a, b Summary) string {
	switch {
	case b.PassRate > a.PassRate+scoreEpsilon:
		return Better
	case b.PassRate < a.PassRate-scoreEpsilon:
		return Worse
	case b.MeanScore > a.MeanScore+scoreEpsilon:
		return Better
	case b.MeanScore < a.MeanScore-scoreEpsilon:
		return Worse
	}
	return Same
}

// Gates are what a comparison must keep for CI to pass.
type Gates struct {
	// FailUnder is the least total pass rate of B (0 to 1; 0: no gate).
	FailUnder float64
	// MaxCost is the most B may cost in US dollars, judges included
	// (0: no gate).
	MaxCost float64
	// MaxRegressions is the most cases that may get worse (-1: no gate).
	MaxRegressions int
}

// Check returns the gates B crossed, one sentence each.
func (c *Comparison) Check(g Gates) []string {
	var out []string
	t := c.B.Total
	if g.FailUnder > 0 && t.PassRate < g.FailUnder {
		out = append(out, fmt.Sprintf("the pass rate %.1f%% is under %.1f%% (--fail-under)", 100*t.PassRate, 100*g.FailUnder))
	}
	if g.MaxCost > 0 && t.CostUSD() > g.MaxCost {
		out = append(out, fmt.Sprintf("the cost %s is over %s (--max-cost)", llm.USD(t.CostUSD()), llm.USD(g.MaxCost)))
	}
	if g.MaxRegressions >= 0 && c.Worse > g.MaxRegressions {
		out = append(out, fmt.Sprintf("%d case(s) got worse, more than %d (--max-regressions)", c.Worse, g.MaxRegressions))
	}
	return out
}

// Table renders the comparison: a row per case, then the totals.
func (c *Comparison) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "A: %s   B: %s\n", name(c.A), name(c.B))
	judged := false
	for _, ch := range c.Cases {
		judged = judged || ch.Judge != nil
	}
	head := []string{"case", "change", "pass A→B", "score A→B", "tokens A→B", "cost A→B", "p50 A→B"}
	if judged {
		head = append(head, "judge")
	}
	rows := [][]string{head}
	for _, ch := range c.Cases {
		row := []string{ch.Case, ch.Change, arrow(ch.A, ch.B, func(s Summary) string { return fmt.Sprintf("%d/%d", s.Passed, s.Trials) }),
			arrow(ch.A, ch.B, func(s Summary) string { return fmt.Sprintf("%.2f", s.MeanScore) }),
			arrow(ch.A, ch.B, func(s Summary) string { return fmt.Sprint(s.Spend.Tokens()) }),
			arrow(ch.A, ch.B, func(s Summary) string { return llm.USD(s.CostUSD()) }),
			arrow(ch.A, ch.B, func(s Summary) string { return ms(s.LatencyP50MS) })}
		if judged {
			row = append(row, judgeText(ch.Judge))
		}
		rows = append(rows, row)
	}
	ta, tb := c.A.Total, c.B.Total
	total := []string{"TOTAL", fmt.Sprintf("%d better, %d worse", c.Better, c.Worse),
		fmt.Sprintf("%.0f%%→%.0f%%", 100*ta.PassRate, 100*tb.PassRate), fmt.Sprintf("%.2f→%.2f", ta.MeanScore, tb.MeanScore),
		fmt.Sprintf("%d→%d", ta.Spend.Tokens(), tb.Spend.Tokens()), llm.USD(ta.CostUSD()) + "→" + llm.USD(tb.CostUSD()),
		ms(ta.LatencyP50MS) + "→" + ms(tb.LatencyP50MS)}
	if judged {
		total = append(total, "")
	}
	rows = append(rows, total)
	writeTable(&b, rows)
	fmt.Fprintf(&b, "pass rate A %.0f%% [%.0f-%.0f], B %.0f%% [%.0f-%.0f] (95%% intervals); tokens %s; p95 %s→%s\n",
		100*ta.PassRate, 100*ta.PassCI[0], 100*ta.PassCI[1], 100*tb.PassRate, 100*tb.PassCI[0], 100*tb.PassCI[1],
		pct(ta.Spend.Tokens(), tb.Spend.Tokens()), ms(ta.LatencyP95MS), ms(tb.LatencyP95MS))
	return b.String()
}

func name(r *Result) string {
	if r.Label != "" {
		return r.ID + " (" + r.Label + ")"
	}
	return r.ID
}

func arrow(a, b *Summary, f func(Summary) string) string {
	switch {
	case a == nil:
		return "–→" + f(*b)
	case b == nil:
		return f(*a) + "→–"
	}
	x, y := f(*a), f(*b)
	if x == y {
		return x
	}
	return x + "→" + y
}

func pct(a, b int) string {
	if a == 0 {
		return fmt.Sprintf("%d→%d", a, b)
	}
	d := 100 * (float64(b) - float64(a)) / float64(a)
	if math.Abs(d) < 0.05 {
		return "unchanged"
	}
	return fmt.Sprintf("%+.1f%%", d)
}

func judgeText(v *PairVerdict) string {
	if v == nil {
		return ""
	}
	s := map[string]string{WinA: "A better", WinB: "B better", Tie: "tie"}[v.Winner]
	if !v.Consistent {
		s += " (orders disagreed)"
	}
	return s
}
