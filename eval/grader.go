package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
)

// Grader grades the output of one run of a case. Graders of a dataset
// file are built by Load; a Go program adds its own (Config.Graders).
type Grader interface {
	// Name names the grader in results.
	Name() string
	// Grade grades o. An error is a grader that could not grade (a judge
	// whose model failed): the case fails with it.
	Grade(ctx context.Context, o *Output) (Grade, error)
}

// Output is what a run of a case produced, for its graders.
type Output struct {
	Case *Case
	// State is the final state; Answer the workflow's output channel as
	// text (a string as it is, any other value as JSON).
	State  graph.State
	Answer string
	// Spend is what the run's model calls spent.
	Spend llm.Spend
	// Models are the models judges call (Config.Judge).
	Models *llm.Models
	// judgeMeter counts what judges spend (under the total budget).
	judgeMeter *llm.Meter
}

// Text returns the value of channel (the answer for "") as text.
func (o *Output) Text(channel string) string {
	if channel == "" {
		return o.Answer
	}
	v, ok := o.State.Value(channel)
	if !ok {
		return ""
	}
	return asText(v)
}

func asText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Grade is one grader's verdict on one run.
type Grade struct {
	Grader string `json:"grader"`
	Pass   bool   `json:"pass"`
	// Score is from 0 to 1 (1 or 0 for graders that only pass or fail).
	Score  float64 `json:"score"`
	Reason string  `json:"reason,omitempty"`
	// Spend is what grading cost (a judge's model calls).
	Spend llm.Spend `json:"spend,omitzero"`
}

func verdict(name string, pass bool, reason string) Grade {
	g := Grade{Grader: name, Pass: pass, Reason: reason}
	if pass {
		g.Score = 1
	}
	return g
}

// textGrader is a grader of the text of a channel (the answer by default).
type textGrader struct {
	name string
	on   string
}

func (g textGrader) Name() string { return g.name }

// exactGrader: the text equals Want (the case's expected output when
// FromCase), spaces at either end aside.
type exactGrader struct {
	textGrader
	want     string
	fromCase bool
}

func (g *exactGrader) needs(c *Case) string {
	if g.fromCase && c.Expected == "" {
		return "compares with the case's expected output, and the case has none"
	}
	return ""
}

func (g *exactGrader) Grade(_ context.Context, o *Output) (Grade, error) {
	want := g.want
	if g.fromCase {
		want = o.Case.Expected
	}
	got := strings.TrimSpace(o.Text(g.on))
	if got == strings.TrimSpace(want) {
		return verdict(g.name, true, ""), nil
	}
	return verdict(g.name, false, fmt.Sprintf("got %s, want %s", clip(got, 80), clip(strings.TrimSpace(want), 80))), nil
}

// containsGrader: the text contains every one of Want (case-insensitive
// when Fold). The score is the share found.
type containsGrader struct {
	textGrader
	want     []string
	fromCase bool
	fold     bool
}

func (g *containsGrader) needs(c *Case) string {
	if g.fromCase && c.Expected == "" {
		return "looks for the case's expected output, and the case has none"
	}
	return ""
}

func (g *containsGrader) Grade(_ context.Context, o *Output) (Grade, error) {
	want := g.want
	if g.fromCase {
		want = []string{o.Case.Expected}
	}
	got := o.Text(g.on)
	if g.fold {
		got = strings.ToLower(got)
	}
	var missing []string
	for _, w := range want {
		s := w
		if g.fold {
			s = strings.ToLower(w)
		}
		if !strings.Contains(got, s) {
			missing = append(missing, clip(w, 40))
		}
	}
	gr := Grade{Grader: g.name, Pass: len(missing) == 0, Score: float64(len(want)-len(missing)) / float64(max(len(want), 1))}
	if len(missing) > 0 {
		gr.Reason = "missing " + strings.Join(missing, ", ")
	}
	return gr, nil
}

// regexGrader: the text matches the pattern at least Min times (1).
type regexGrader struct {
	textGrader
	re  *regexp.Regexp
	min int
}

func (g *regexGrader) Grade(_ context.Context, o *Output) (Grade, error) {
	n := len(g.re.FindAllStringIndex(o.Text(g.on), g.min))
	if n >= g.min {
		return verdict(g.name, true, ""), nil
	}
	if g.min == 1 {
		return verdict(g.name, false, fmt.Sprintf("no match of /%s/", g.re)), nil
	}
	return verdict(g.name, false, fmt.Sprintf("%d matches of /%s/, want at least %d", n, g.re, g.min)), nil
}

// budgetGrader: the run spent at most Tokens tokens and USD dollars.
type budgetGrader struct {
	name string
	max  llm.Budget
}

func (g *budgetGrader) Name() string { return g.name }

func (g *budgetGrader) Grade(_ context.Context, o *Output) (Grade, error) {
	var over []string
	if g.max.Tokens > 0 && o.Spend.Tokens() > g.max.Tokens {
		over = append(over, fmt.Sprintf("%d tokens of at most %d", o.Spend.Tokens(), g.max.Tokens))
	}
	if g.max.USD > 0 && o.Spend.CostUSD > g.max.USD {
		over = append(over, fmt.Sprintf("%s of at most %s", llm.USD(o.Spend.CostUSD), llm.USD(g.max.USD)))
	}
	if len(over) > 0 {
		return verdict(g.name, false, "spent "+strings.Join(over, " and ")), nil
	}
	return verdict(g.name, true, fmt.Sprintf("spent %d tokens", o.Spend.Tokens())), nil
}

// score turns an expression's or a judge's value into a score and a pass:
// a bool passes or fails; a number is a score from 0 to 1, passing at
// threshold.
func score(v any, threshold float64) (float64, bool, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true, nil
		}
		return 0, false, nil
	case int:
		return score(float64(x), threshold)
	case int64:
		return score(float64(x), threshold)
	case float64:
		if math.IsNaN(x) || x < 0 || x > 1 {
			return 0, false, fmt.Errorf("the score %v is not between 0 and 1", x)
		}
		return x, x >= threshold, nil
	}
	return 0, false, fmt.Errorf("want a bool or a score from 0 to 1, got %s", clip(asText(v), 60))
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return fmt.Sprintf("%q…", string(r[:n]))
	}
	return fmt.Sprintf("%q", s)
}

// GraderFunc is a Grader written as a function.
type GraderFunc struct {
	Label string
	Func  func(ctx context.Context, o *Output) (Grade, error)
}

// Name implements Grader.
func (g GraderFunc) Name() string { return g.Label }

// Grade implements Grader.
func (g GraderFunc) Grade(ctx context.Context, o *Output) (Grade, error) { return g.Func(ctx, o) }
