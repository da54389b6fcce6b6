package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/workflows"
)

// graderKinds are the keys that say what a grader of a file does.
var graderKinds = []string{"exact", "contains", "regex", "schema", "expr", "budget", "judge"}

var graderKeys = append([]string{"name", "on", "pass", "ignore_case", "min"}, graderKinds...)

// graders reads a list of grader specs at n; c is the case they belong to
// (nil: the dataset's).
func (p *parser) graders(n *yaml.Node, path string, c *Case) []Grader {
	if n.Kind != yaml.SequenceNode {
		p.ps.node(n, path, "want a list of graders, e.g. - {contains: SQLite}")
		return nil
	}
	var out []Grader
	names := map[string]bool{}
	for i, g := range n.Content {
		gp := fmt.Sprintf("%s[%d]", path, i)
		gr := p.grader(g, gp, c)
		if gr == nil {
			continue
		}
		if names[gr.Name()] {
			p.ps.node(g, gp, "grader name %q is used twice in this list: give one a name", gr.Name())
			continue
		}
		names[gr.Name()] = true
		out = append(out, gr)
	}
	return out
}

// grader reads one grader spec: a mapping with one of graderKinds.
func (p *parser) grader(n *yaml.Node, path string, c *Case) Grader {
	if n.Kind != yaml.MappingNode {
		p.ps.node(n, path, "want a grader: a mapping with one of %s", strings.Join(graderKinds, ", "))
		return nil
	}
	var (
		name, on   string
		kind       string
		kindNode   *yaml.Node
		threshold  = 0.5
		ignoreCase bool
		minCount   = 1
		bad        bool
	)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := path + "." + k.Value
		switch k.Value {
		case "name":
			name = p.str(v, kp)
		case "on":
			on = p.str(v, kp)
			if on == "answer" && p.wf != nil {
				on = p.wf.OutputChannel()
			}
		case "pass":
			if err := v.Decode(&threshold); err != nil || threshold < 0 || threshold > 1 {
				p.ps.node(v, kp, "want the score a run needs to pass, from 0 to 1")
				bad = true
			}
		case "ignore_case":
			if err := v.Decode(&ignoreCase); err != nil {
				p.ps.node(v, kp, "want true or false")
			}
		case "min":
			if err := v.Decode(&minCount); err != nil || minCount < 1 {
				p.ps.node(v, kp, "want the fewest matches, 1 or more")
				bad = true
			}
		default:
			if !isKind(k.Value) {
				p.ps.node(k, kp, "unknown key %q%s (a grader has one of %s, and name, on, pass, ignore_case, min)",
					k.Value, suggest(k.Value, graderKeys), strings.Join(graderKinds, ", "))
				bad = true
				continue
			}
			if kind != "" {
				p.ps.node(k, kp, "a grader does one thing: %s or %s, not both (make two graders)", kind, k.Value)
				bad = true
				continue
			}
			kind, kindNode = k.Value, v
		}
	}
	if kind == "" {
		if !bad {
			p.ps.node(n, path, "the grader says nothing to check: give one of %s", strings.Join(graderKinds, ", "))
		}
		return nil
	}
	if name == "" {
		name = kind
	}
	if on != "" && p.wf != nil && !p.hasChannel(on) {
		p.ps.node(n, path+".on", "the workflow %s has no channel %q", p.wf.Name(), on)
		return nil
	}
	kp := path + "." + kind
	tg := textGrader{name: name, on: on}
	switch kind {
	case "exact":
		want, fromCase, ok := p.expected(kindNode, kp, c, false)
		if !ok {
			return nil
		}
		return &exactGrader{textGrader: tg, want: first(want), fromCase: fromCase}
	case "contains":
		want, fromCase, ok := p.expected(kindNode, kp, c, true)
		if !ok {
			return nil
		}
		return &containsGrader{textGrader: tg, want: want, fromCase: fromCase, fold: ignoreCase}
	case "regex":
		src := p.str(kindNode, kp)
		if ignoreCase {
			src = "(?i)" + src
		}
		re, err := regexp.Compile(src)
		if err != nil {
			p.ps.node(kindNode, kp, "not a valid regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			return nil
		}
		return &regexGrader{textGrader: tg, re: re, min: minCount}
	case "schema":
		s := p.schema(kindNode, kp)
		if s == nil {
			return nil
		}
		return &schemaGrader{textGrader: tg, schema: s}
	case "expr":
		return p.exprGrader(kindNode, kp, name, threshold)
	case "budget":
		var b struct {
			Tokens int     `yaml:"tokens"`
			USD    float64 `yaml:"usd"`
		}
		if err := kindNode.Decode(&b); err != nil || kindNode.Kind != yaml.MappingNode || (b.Tokens <= 0 && b.USD <= 0) {
			p.ps.node(kindNode, kp, "want {tokens: N} or {usd: X} (or both): the most a run of the case may spend")
			return nil
		}
		return &budgetGrader{name: name, max: llm.Budget{Tokens: b.Tokens, USD: b.USD}}
	case "judge":
		return p.judge(kindNode, kp, name, threshold, c)
	}
	return nil
}

func isKind(k string) bool {
	for _, x := range graderKinds {
		if x == k {
			return true
		}
	}
	return false
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func (p *parser) hasChannel(name string) bool {
	x, err := p.wf.Expr("state." + name)
	return err == nil && x != nil
}

// expected reads what exact and contains compare with: a string (a list
// of them for contains), or true for the case's expected output.
func (p *parser) expected(n *yaml.Node, path string, c *Case, list bool) ([]string, bool, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		if n.Value != "true" {
			p.ps.node(n, path, "want the text to look for, or true for the case's expected output")
			return nil, false, false
		}
		if c != nil && c.Expected == "" {
			p.ps.node(n, path, "true compares with the case's expected output, and the case has none")
			return nil, false, false
		}
		return nil, true, true
	}
	if n.Kind == yaml.SequenceNode && list {
		var out []string
		for i, e := range n.Content {
			if e.Kind != yaml.ScalarNode {
				p.ps.node(e, fmt.Sprintf("%s[%d]", path, i), "want a string")
				return nil, false, false
			}
			out = append(out, e.Value)
		}
		if len(out) == 0 {
			p.ps.node(n, path, "the list is empty")
			return nil, false, false
		}
		return out, false, true
	}
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		what := "a string"
		if list {
			what = "a string or a list of strings"
		}
		p.ps.node(n, path, "want %s, or true for the case's expected output", what)
		return nil, false, false
	}
	return []string{n.Value}, false, true
}

// schema reads a JSON Schema: inline, or a file named relative to the
// dataset.
func (p *parser) schema(n *yaml.Node, path string) *jsonschema.Schema {
	var raw []byte
	if n.Kind == yaml.ScalarNode {
		file := n.Value
		if !filepath.IsAbs(file) {
			file = filepath.Join(p.dir, file)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			p.ps.node(n, path, "the schema file: %v", err)
			return nil
		}
		raw = b
	} else {
		var v any
		if err := n.Decode(&v); err != nil {
			p.ps.node(n, path, "%v", err)
			return nil
		}
		b, err := json.Marshal(jsonable(v))
		if err != nil {
			p.ps.node(n, path, "the schema cannot be JSON: %v", err)
			return nil
		}
		raw = b
	}
	c := jsonschema.NewCompiler()
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("remote reference %s: not loaded", u)
	}
	const url = "mem://eval/schema.json"
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		p.ps.node(n, path, "not a valid JSON Schema: %s", oneLine(err))
		return nil
	}
	s, err := c.Compile(url)
	if err != nil {
		p.ps.node(n, path, "not a valid JSON Schema: %s", oneLine(err))
		return nil
	}
	return s
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// exprGrader compiles an expression over the workflow's state.
func (p *parser) exprGrader(n *yaml.Node, path, name string, threshold float64) Grader {
	src := p.str(n, path)
	if src == "" {
		return nil
	}
	if p.wf == nil { // read for its cases only: the expression is not checked
		return &exprGrader{name: name, src: src, threshold: threshold}
	}
	x, err := p.wf.Expr(src)
	if err != nil {
		var xe *workflows.ExprError
		if errors.As(err, &xe) {
			line, col := n.Line, n.Column
			switch {
			case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
				line, col = line+xe.Line, xe.Column
			case xe.Line > 1:
			case n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0:
				col += xe.Column
			default:
				col += xe.Column - 1
			}
			p.ps.at(line, col, path, "%s", xe.Message)
			return nil
		}
		p.ps.node(n, path, "%v", err)
		return nil
	}
	return &exprGrader{name: name, src: src, x: x, threshold: threshold}
}

// judge reads {rubric, tier, pass} (a bare string is the rubric).
func (p *parser) judge(n *yaml.Node, path, name string, threshold float64, c *Case) Grader {
	j := &judgeGrader{name: name, tier: llm.TierBasic, threshold: threshold}
	switch n.Kind {
	case yaml.ScalarNode:
		j.rubric = n.Value
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := path + "." + k.Value
			switch k.Value {
			case "rubric":
				j.rubric = p.str(v, kp)
			case "tier":
				t, err := llm.ParseTier(p.str(v, kp))
				if err != nil {
					p.ps.node(v, kp, "%s", strings.TrimPrefix(err.Error(), "llm: "))
					return nil
				}
				j.tier = t
			case "pass":
				if err := v.Decode(&j.threshold); err != nil || j.threshold < 0 || j.threshold > 1 {
					p.ps.node(v, kp, "want the score a run needs to pass, from 0 to 1")
					return nil
				}
			default:
				p.ps.node(k, kp, "unknown key %q%s (a judge has rubric, tier and pass)", k.Value, suggest(k.Value, []string{"rubric", "tier", "pass"}))
				return nil
			}
		}
	default:
		p.ps.node(n, path, "want {rubric: TEXT, tier: TIER, pass: 0.5}, or the rubric")
		return nil
	}
	if j.rubric == "" {
		if c != nil && c.Rubric == "" {
			p.ps.node(n, path, "the judge has no rubric, and the case none")
			return nil
		}
		j.fromCase = true
	}
	return j
}
