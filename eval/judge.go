package eval

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/structured"
)

// ErrNoJudge: a judge grader has no model to ask (Config.Judge).
var ErrNoJudge = errors.New("eval: no model for the judge")

// maxJudged is the most characters of an answer a judge is shown.
const maxJudged = 32 << 10

// Verdict is what a judge answers: a score from 0 to 1 and its reason.
type Verdict struct {
	Score  float64 `json:"score"`
	Reason string  `json:"reason"`
}

var verdictSchema = []byte(`{"type":"object","properties":{` +
	`"score":{"type":"number","minimum":0,"maximum":1,"description":"0: fails the rubric; 1: meets all of it"},` +
	`"reason":{"type":"string","description":"one or two sentences: why this score"}},` +
	`"required":["score","reason"],"additionalProperties":false}`)

// judgeSystem tells the judge what it does.
const judgeSystem = "You are an impartial evaluator. You grade one answer to a task against a rubric. " +
	"Judge only what the rubric asks; do not reward length. Give a score from 0 (fails the rubric) to 1 (meets all of it) and a short reason."

// judgeGrader asks a model of a tier to score the answer against a
// rubric (the case's when it has none of its own).
type judgeGrader struct {
	name, rubric string
	fromCase     bool
	tier         llm.Tier
	threshold    float64
}

func (g *judgeGrader) Name() string { return g.name }

func (g *judgeGrader) needs(c *Case) string {
	if g.fromCase && c.Rubric == "" {
		return "the judge has no rubric, and the case none"
	}
	return ""
}

func (g *judgeGrader) Grade(ctx context.Context, o *Output) (Grade, error) {
	rubric := g.rubric
	if g.fromCase {
		rubric = o.Case.Rubric
	}
	var b strings.Builder
	section(&b, "rubric", rubric, maxJudged/4)
	section(&b, "task", o.Case.Input, maxJudged/4)
	if o.Case.Expected != "" {
		section(&b, "expected_answer", o.Case.Expected, maxJudged/4)
	}
	section(&b, "answer", o.Answer, maxJudged)
	b.WriteString("Grade the answer against the rubric.\n")
	v, spend, err := judgeCall[Verdict](ctx, o.Models, o.judgeMeter, g.tier, "judge:"+g.name, b.String(), verdictSchema)
	gr := Grade{Grader: g.name, Spend: spend}
	if err != nil {
		return gr, fmt.Errorf("eval: judge %s: %w", g.name, err)
	}
	gr.Score, gr.Pass, gr.Reason = v.Score, v.Score >= g.threshold, v.Reason
	return gr, nil
}

// judgeCall asks the model of tier for structured output of schema,
// labelled agent, counting what it spends under parent (nil: none).
func judgeCall[T any](ctx context.Context, models *llm.Models, parent *llm.Meter, tier llm.Tier, agent, prompt string, schema []byte) (T, llm.Spend, error) {
	var zero T
	if models == nil {
		return zero, llm.Spend{}, ErrNoJudge
	}
	m, err := models.Model(tier)
	if err != nil {
		return zero, llm.Spend{}, err
	}
	meter := llm.NewMeter("judge", llm.Budget{}, llm.Spend{}, parent)
	ctx = llm.WithAgent(llm.WithMeter(ctx, meter), agent)
	model := llm.Observe(m, models.Profile(tier).Info(tier))
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, judgeSystem),
		llms.TextParts(llms.ChatMessageTypeHuman, prompt),
	}
	v, err := structured.Generate[T](ctx, model, msgs, structured.WithSchema(schema))
	return v, meter.Spent(), err
}

// section writes text, cut to n bytes, between <name> and </name> lines:
// an answer's own markdown headings cannot be taken for the prompt's.
func section(b *strings.Builder, name, text string, n int) {
	fmt.Fprintf(b, "<%s>\n%s\n</%s>\n\n", name, clipText(strings.ReplaceAll(text, "</"+name+">", "</ "+name+">"), n), name)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "\n[… cut: the text goes on]"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
