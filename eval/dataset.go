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
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/coorflow/coorflow/workflows"
)

// Limits of a dataset file: it is read whole, and its cases are run.
const (
	// MaxDatasetBytes is the largest dataset file read.
	MaxDatasetBytes = 16 << 20
	// MaxCases is the most cases a dataset may hold.
	MaxCases = 10_000
	// MaxGraders is the most graders a case may have (its own and the
	// dataset's).
	MaxGraders = 32
)

// ErrInvalidDataset: a dataset file is not valid. The error is a
// *workflows.FileError listing every problem, each at file:line:column.
var ErrInvalidDataset = errors.New("eval: invalid dataset")

// Dataset is a file of cases to run a workflow on, with the graders of
// every case.
type Dataset struct {
	// Path is the file as given to Load.
	Path string
	// Name names the dataset (its name key, else the file's base name).
	Name string
	// Cases are in file order.
	Cases []*Case
	// Graders grade every case, before the case's own.
	Graders []Grader
}

// Case is one input of a dataset, with what a good answer is.
type Case struct {
	// ID names the case: letters, digits, '.', '_' and '-' (default
	// case-N, N its position from 1).
	ID string `json:"id"`
	// Input is the text written to the workflow's input channel (an
	// object or list in the file is given as its JSON).
	Input string `json:"input"`
	// Expected is the expected output, when given.
	Expected string `json:"expected,omitempty"`
	// Rubric tells a judge what a good answer is.
	Rubric   string         `json:"rubric,omitempty"`
	Tags     []string       `json:"tags,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	// Answers answer the questions a run asks, by the name of the node
	// that asks (review: y) or by the question's id. A question without
	// an answer leaves the case waiting.
	Answers map[string]any `json:"answers,omitempty"`
	// Graders are the case's own graders.
	Graders []Grader `json:"-"`
	// Line is where the case starts in the file.
	Line int `json:"line,omitempty"`
	col  int
}

var caseID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Load reads a dataset: YAML (a list of cases, or a mapping with name,
// graders and cases), or JSON Lines when the file ends in .jsonl or
// .ndjson (one case per line; a line with only a graders key gives the
// graders of every case). wf is the workflow the cases run on: expression
// graders are type-checked against its channels (nil: they are not, and
// fail when they grade: for reading the cases only). Every problem is
// reported with its file:line:column (a *workflows.FileError, which is
// ErrInvalidDataset).
func Load(path string, wf *workflows.File) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: dataset: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxDatasetBytes+1))
	if err != nil {
		return nil, fmt.Errorf("eval: dataset %s: %w", path, err)
	}
	if len(data) > MaxDatasetBytes {
		return nil, fmt.Errorf("eval: dataset %s: larger than %d bytes", path, MaxDatasetBytes)
	}
	return Parse(path, data, wf)
}

// Parse is Load of data read from path.
func Parse(path string, data []byte, wf *workflows.File) (*Dataset, error) {
	p := &parser{ps: &problemList{file: path}, dir: filepath.Dir(path), wf: wf}
	ds := &Dataset{Path: path, Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		p.jsonl(ds, data)
	default:
		p.yamlFile(ds, data)
	}
	if len(ds.Cases) == 0 && len(p.ps.list) == 0 {
		p.ps.at(1, 1, "", "the dataset has no cases")
	}
	p.checkCases(ds)
	if err := p.ps.err(); err != nil {
		return nil, err
	}
	return ds, nil
}

// problemList collects the problems of one file, as workflows.Problem.
type problemList struct {
	file string
	list []workflows.Problem
}

func (ps *problemList) at(line, col int, path, format string, args ...any) {
	ps.list = append(ps.list, workflows.Problem{File: ps.file, Line: line, Column: col, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (ps *problemList) node(n *yaml.Node, path, format string, args ...any) {
	ps.at(n.Line, n.Column, path, format, args...)
}

func (ps *problemList) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	slices.SortStableFunc(ps.list, func(a, b workflows.Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	return &datasetError{&workflows.FileError{File: ps.file, Problems: ps.list}}
}

// datasetError is a workflows.FileError that is also ErrInvalidDataset.
type datasetError struct{ *workflows.FileError }

func (e *datasetError) Error() string {
	return "eval: " + strings.TrimPrefix(e.FileError.Error(), "workflows: ")
}

func (e *datasetError) Is(target error) bool { return target == ErrInvalidDataset }

func (e *datasetError) Unwrap() error { return e.FileError }

type parser struct {
	// extended is set while reading a file another extends: it may not
	// extend one itself.
	extended bool
	ps       *problemList
	dir      string
	wf       *workflows.File
	// line is added to the lines of a JSON Lines record's nodes.
	line int
}

func (p *parser) yamlFile(ds *Dataset, data []byte) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line := 1
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		p.ps.at(line, 1, "", "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return
	}
	if len(doc.Content) == 0 {
		return
	}
	root := doc.Content[0]
	switch root.Kind {
	case yaml.SequenceNode:
		p.cases(ds, root, "cases")
	case yaml.MappingNode:
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			switch k.Value {
			case "name":
				ds.Name = p.str(v, "name")
			case "description":
			case "extends":
				p.extends(ds, v)
			case "graders":
				ds.Graders = p.graders(v, "graders", nil)
			case "cases":
				if v.Kind != yaml.SequenceNode {
					p.ps.node(v, "cases", "want a list of cases")
					continue
				}
				p.cases(ds, v, "cases")
			default:
				p.ps.node(k, k.Value, "unknown key %q%s (a dataset has name, description, extends, graders and cases)", k.Value, suggest(k.Value, []string{"name", "description", "extends", "graders", "cases"}))
			}
		}
	default:
		p.ps.node(root, "", "want a list of cases, or a mapping with graders and cases")
	}
}

// extends reads the dataset a file extends (a path relative to it): its
// cases and graders come first.
func (p *parser) extends(ds *Dataset, v *yaml.Node) {
	if p.extended {
		p.ps.node(v, "extends", "a dataset that another extends cannot extend one itself")
		return
	}
	path := p.str(v, "extends")
	if path == "" {
		return
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		p.ps.node(v, "extends", "%v", err)
		return
	}
	if len(data) > MaxDatasetBytes {
		p.ps.node(v, "extends", "%s is larger than %d bytes", path, MaxDatasetBytes)
		return
	}
	sub := &parser{extended: true, ps: &problemList{file: path}, dir: filepath.Dir(path), wf: p.wf}
	base := &Dataset{Path: path}
	sub.yamlFile(base, data)
	sub.checkCases(base)
	p.ps.list = append(p.ps.list, sub.ps.list...)
	ds.Cases = append(base.Cases, ds.Cases...)
	ds.Graders = append(base.Graders, ds.Graders...)
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func (p *parser) jsonl(ds *Dataset, data []byte) {
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		n := i + 1
		var doc yaml.Node
		if !json.Valid(line) {
			var v any
			err := json.Unmarshal(line, &v)
			p.ps.at(n, 1, "", "not valid JSON: %v", err)
			continue
		}
		if err := yaml.Unmarshal(line, &doc); err != nil || len(doc.Content) == 0 {
			p.ps.at(n, 1, "", "not a JSON object")
			continue
		}
		p.line = n - 1
		shift(doc.Content[0], p.line)
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode {
			p.ps.node(root, "", "want a JSON object (a case, or {\"graders\": [...]})")
			continue
		}
		if len(root.Content) == 2 && root.Content[0].Value == "graders" {
			ds.Graders = append(ds.Graders, p.graders(root.Content[1], "graders", nil)...)
			continue
		}
		if len(ds.Cases) >= MaxCases {
			p.ps.node(root, "", "more than %d cases", MaxCases)
			return
		}
		p.oneCase(ds, root, fmt.Sprintf("cases[%d]", len(ds.Cases)))
	}
}

// shift moves the lines of n's tree down by d.
func shift(n *yaml.Node, d int) {
	n.Line += d
	for _, c := range n.Content {
		shift(c, d)
	}
}

func (p *parser) cases(ds *Dataset, seq *yaml.Node, path string) {
	for i, n := range seq.Content {
		if len(ds.Cases) >= MaxCases {
			p.ps.node(n, path, "more than %d cases", MaxCases)
			return
		}
		p.oneCase(ds, n, fmt.Sprintf("%s[%d]", path, i))
	}
}

var caseKeys = []string{"id", "input", "expected", "rubric", "tags", "metadata", "answers", "graders"}

func (p *parser) oneCase(ds *Dataset, n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		p.ps.node(n, path, "want a case: a mapping with input (and id, expected, rubric, tags, metadata, answers, graders)")
		return
	}
	c := &Case{Line: n.Line, col: n.Column}
	var graders *yaml.Node
	hasInput := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := path + "." + k.Value
		switch k.Value {
		case "id":
			c.ID = p.str(v, kp)
			if c.ID != "" && !caseID.MatchString(c.ID) {
				p.ps.node(v, kp, "case id %q: use up to 64 letters, digits, '.', '_' and '-', starting with a letter or digit", c.ID)
			}
		case "input":
			hasInput = true
			c.Input = p.text(v, kp)
			if strings.TrimSpace(c.Input) == "" {
				p.ps.node(v, kp, "the input is empty")
			}
		case "expected":
			c.Expected = p.text(v, kp)
		case "rubric":
			c.Rubric = p.str(v, kp)
		case "tags":
			if err := v.Decode(&c.Tags); err != nil {
				p.ps.node(v, kp, "want a list of tags (strings)")
			}
		case "metadata":
			if err := v.Decode(&c.Metadata); err != nil || v.Kind != yaml.MappingNode {
				p.ps.node(v, kp, "want a mapping")
			}
		case "answers":
			if err := v.Decode(&c.Answers); err != nil || v.Kind != yaml.MappingNode {
				p.ps.node(v, kp, "want a mapping of node names (or question ids) to answers, e.g. {review: y}")
			}
		case "graders":
			graders = v
		default:
			p.ps.node(k, kp, "unknown key %q%s (a case has %s)", k.Value, suggest(k.Value, caseKeys), strings.Join(caseKeys, ", "))
		}
	}
	if !hasInput {
		p.ps.node(n, path, "the case has no input")
	}
	if c.ID == "" {
		c.ID = fmt.Sprintf("case-%d", len(ds.Cases)+1)
	}
	if graders != nil {
		c.Graders = p.graders(graders, path+".graders", c)
	}
	ds.Cases = append(ds.Cases, c)
}

// checkCases checks what depends on every case: unique ids, and the
// dataset's graders that need a case's expected output or rubric.
func (p *parser) checkCases(ds *Dataset) {
	seen := map[string]int{}
	for i, c := range ds.Cases {
		if first, ok := seen[c.ID]; ok {
			p.ps.at(c.Line, c.col, fmt.Sprintf("cases[%d].id", i), "case id %q is used twice (first at line %d)", c.ID, first)
		}
		seen[c.ID] = c.Line
		for _, g := range ds.Graders {
			if n, ok := g.(needsCase); ok {
				if msg := n.needs(c); msg != "" {
					p.ps.at(c.Line, c.col, fmt.Sprintf("cases[%d]", i), "grader %s: %s", g.Name(), msg)
				}
			}
		}
		if len(ds.Graders)+len(c.Graders) > MaxGraders {
			p.ps.at(c.Line, c.col, fmt.Sprintf("cases[%d]", i), "more than %d graders", MaxGraders)
		}
	}
}

// needsCase is a grader that needs something of each case it grades.
type needsCase interface {
	// needs says what c lacks, or "".
	needs(c *Case) string
}

// str reads a scalar as a string.
func (p *parser) str(n *yaml.Node, path string) string {
	if n.Kind != yaml.ScalarNode {
		p.ps.node(n, path, "want a string")
		return ""
	}
	return n.Value
}

// text reads a scalar as it is, and anything else as its JSON.
func (p *parser) text(n *yaml.Node, path string) string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return n.Value
	}
	var v any
	if err := n.Decode(&v); err != nil {
		p.ps.node(n, path, "%v", err)
		return ""
	}
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		p.ps.node(n, path, "cannot be given as JSON: %v", err)
		return ""
	}
	return string(b)
}

// jsonable turns the map[any]any yaml.v3 may decode into map[string]any.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	}
	return v
}

// suggest returns ` (did you mean "x"?)` for a close name.
func suggest(got string, names []string) string { return workflows.DidYouMean(got, names) }
