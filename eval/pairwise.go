package eval

import (
	"context"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/llm"
)

// The winners of a pairwise comparison.
const (
	WinA = "a"
	WinB = "b"
	Tie  = "tie"
)

// PairVerdict is a judge's comparison of two answers to one case, asked in
// both orders so that the position of an answer cannot decide: the
// winner is the one preferred in both orders, else a tie.
type PairVerdict struct {
	Winner string `json:"winner"`
	// Consistent is false when the two orders disagreed (position bias):
	// the verdict is then a tie.
	Consistent bool `json:"consistent"`
	// Reasons are the judge's, A shown first, then B first.
	Reasons [2]string `json:"reasons"`
	Spend   llm.Spend `json:"spend"`
}

type pairAnswer struct {
	Winner string `json:"winner"`
	Reason string `json:"reason"`
}

var pairSchema = []byte(`{"type":"object","properties":{` +
	`"winner":{"type":"string","enum":["first","second","tie"],"description":"the better answer by the rubric"},` +
	`"reason":{"type":"string","description":"one or two sentences: why"}},` +
	`"required":["winner","reason"],"additionalProperties":false}`)

// Pairwise asks the model of tier which of answers a and b to case c is
// better by the rubric (the case's when rubric is ""), in both orders.
func Pairwise(ctx context.Context, models *llm.Models, tier llm.Tier, c *Case, rubric, a, b string) (PairVerdict, error) {
	if rubric == "" {
		rubric = c.Rubric
	}
	if rubric == "" {
		rubric = "The better answer does what the task asks, correctly and completely, and says no more than it needs to."
	}
	var v PairVerdict
	ask := func(first, second string) (pairAnswer, error) {
		var p strings.Builder
		section(&p, "rubric", rubric, maxJudged/4)
		section(&p, "task", c.Input, maxJudged/4)
		if c.Expected != "" {
			section(&p, "expected_answer", c.Expected, maxJudged/4)
		}
		section(&p, "first_answer", first, maxJudged)
		section(&p, "second_answer", second, maxJudged)
		p.WriteString("Which answer is better by the rubric: first, second, or tie?\n")
		ans, spend, err := judgeCall[pairAnswer](ctx, models, nil, tier, "judge:pairwise", p.String(), pairSchema)
		v.Spend.Merge(spend)
		return ans, err
	}
	ab, err := ask(a, b)
	if err != nil {
		return v, fmt.Errorf("eval: pairwise judge: %w", err)
	}
	ba, err := ask(b, a)
	if err != nil {
		return v, fmt.Errorf("eval: pairwise judge: %w", err)
	}
	v.Reasons = [2]string{ab.Reason, ba.Reason}
	first := map[string]string{"first": WinA, "second": WinB, "tie": Tie}[ab.Winner]
	second := map[string]string{"first": WinB, "second": WinA, "tie": Tie}[ba.Winner]
	v.Consistent = first == second
	v.Winner = Tie
	if v.Consistent {
		v.Winner = first
	}
	return v, nil
}
