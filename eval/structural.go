package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/coorflow/coorflow/llm/structured"
	"github.com/coorflow/coorflow/workflows"
)

// schemaGrader: the text is JSON (found in it as structured output is:
// fences and prose around it skipped) that the schema validates.
type schemaGrader struct {
	textGrader
	schema *jsonschema.Schema
}

func (g *schemaGrader) Grade(_ context.Context, o *Output) (Grade, error) {
	text := o.Text(g.on)
	raw, err := structured.ExtractJSON(text)
	if err != nil {
		return verdict(g.name, false, "no JSON in the output"), nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return verdict(g.name, false, "not JSON: "+err.Error()), nil
	}
	if err := g.schema.Validate(v); err != nil {
		return verdict(g.name, false, strings.Join(strings.Fields(err.Error()), " ")), nil
	}
	return verdict(g.name, true, ""), nil
}

// exprGrader: an expression over the final state (state.CHANNEL,
// config.KEY), as workflow conditions are written: true passes; a number
// is a score from 0 to 1, passing at the threshold.
type exprGrader struct {
	name, src string
	x         *workflows.Expr
	threshold float64
}

func (g *exprGrader) Name() string { return g.name }

func (g *exprGrader) Grade(ctx context.Context, o *Output) (Grade, error) {
	if g.x == nil {
		return Grade{Grader: g.name}, fmt.Errorf("eval: grader %s: its dataset was loaded without the workflow its expression reads", g.name)
	}
	v, err := g.x.Eval(ctx, o.State)
	if err != nil {
		return Grade{Grader: g.name, Reason: fmt.Sprintf("%s: %v", g.src, err)}, nil
	}
	s, pass, err := score(v, g.threshold)
	if err != nil {
		return Grade{Grader: g.name, Reason: fmt.Sprintf("%s: %v", g.src, err)}, nil
	}
	gr := Grade{Grader: g.name, Pass: pass, Score: s}
	if !pass {
		gr.Reason = fmt.Sprintf("%s is %s", g.src, asText(v))
	}
	return gr, nil
}
