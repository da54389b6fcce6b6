package eval_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/eval"
	"github.com/coorflow/coorflow/workflows"
)

func TestBadDatasetsSayWhatIsWrongAndWhere(t *testing.T) {
	f, _ := workflow(t, staticModels(t, answers(nil)))
	tests := []struct {
		name, file, text string
		want             []string
	}{
		{"no input", "a.yaml", "cases:\n  - id: x\n    expected: y\n", []string{"a.yaml:2:5: cases[0]: the case has no input"}},
		{"bad id and twice", "b.yaml", "- {id: 'a b', input: q}\n- {id: c, input: q}\n- {id: c, input: r}\n",
			[]string{`b.yaml:1:8: cases[0].id: case id "a b": use up to 64 letters`, `b.yaml:3:3: cases[2].id: case id "c" is used twice (first at line 2)`}},
		{"unknown key", "c.yaml", "- input: q\n  expcted: y\n", []string{`c.yaml:2:3: cases[0].expcted: unknown key "expcted" (did you mean "expected"?)`}},
		{"bad regex", "d.yaml", "graders:\n  - regex: '(['\ncases:\n  - input: q\n", []string{"d.yaml:2:12: graders[0].regex: not a valid regular expression: missing closing ]"}},
		{"bad expr", "e.yaml", "graders:\n  - expr: 'len(state.anser) > 0'\ncases: [{input: q}]\n",
			[]string{`e.yaml:2:22: graders[0].expr: unknown field anser (did you mean "answer"?)`}},
		{"bad schema", "f.yaml", "graders:\n  - schema: {type: 12}\ncases: [{input: q}]\n", []string{"f.yaml:2:13: graders[0].schema: not a valid JSON Schema:"}},
		{"two kinds", "g.yaml", "- input: q\n  graders: [{exact: a, regex: b}]\n", []string{"g.yaml:2:24: cases[0].graders[0].regex: a grader does one thing: exact or regex, not both"}},
		{"expected missing", "h.yaml", "graders: [{contains: true}]\ncases:\n  - {id: k, input: q, expected: x}\n  - {id: l, input: q}\n",
			[]string{"h.yaml:4:5: cases[1]: grader contains: looks for the case's expected output, and the case has none"}},
		{"judge without rubric", "i.yaml", "- input: q\n  graders: [{judge: {tier: reasoning}}]\n", []string{"i.yaml:2:21: cases[0].graders[0].judge: the judge has no rubric, and the case none"}},
		{"bad tier", "j.yaml", "- input: q\n  rubric: r\n  graders: [{judge: {tier: smart}}]\n", []string{`j.yaml:3:28: cases[0].graders[0].judge.tier: unknown tier "smart"`}},
		{"bad jsonl line", "k.jsonl", "{\"input\": \"q\"}\n{\"input\": \n{\"input\": \"r\", \"graders\": [{\"regex\": \"(\"}]}\n",
			[]string{"k.jsonl:2:1: not valid JSON", "k.jsonl:3:38: cases[1].graders[0].regex: not a valid regular expression"}},
		{"no channel", "l.yaml", "- input: q\n  graders: [{on: verdikt, exact: y}]\n", []string{`l.yaml:2:13: cases[0].graders[0].on: the workflow echo has no channel "verdikt"`}},
		{"empty", "m.yaml", "cases: []\n", []string{"m.yaml:1:1: the dataset has no cases"}},
		{"not yaml", "n.yaml", "cases:\n  - input: [q\n", []string{"n.yaml:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.file)
			require.NoError(t, os.WriteFile(path, []byte(tt.text), 0o600))
			_, err := eval.Load(path, f)
			require.Error(t, err)
			assert.True(t, errors.Is(err, eval.ErrInvalidDataset))
			var fe *workflows.FileError
			require.True(t, errors.As(err, &fe), "a *workflows.FileError, which the CLI prints one problem a line")
			require.Len(t, fe.Problems, len(tt.want), err.Error())
			for i, w := range tt.want {
				assert.Contains(t, fe.Problems[i].String(), filepath.Dir(path)+"/"+w)
			}
		})
	}
}

func TestDatasetsInYAMLAndJSONLAreTheSame(t *testing.T) {
	f, _ := workflow(t, staticModels(t, answers(nil)))
	y := dataset(t, f, "cases.yaml", `
name: capitals
graders: [{contains: true, ignore_case: true}]
cases:
  - id: fr
    input: capital of France?
    expected: Paris
    tags: [europe]
    metadata: {difficulty: 1}
  - input: {question: 'capital of Peru?'}
    expected: Lima
    answers: {approve: yes}
`)
	j := dataset(t, f, "cases.jsonl", `{"graders": [{"contains": true, "ignore_case": true}]}
{"id": "fr", "input": "capital of France?", "expected": "Paris", "tags": ["europe"], "metadata": {"difficulty": 1}}

{"input": {"question": "capital of Peru?"}, "expected": "Lima", "answers": {"approve": "yes"}}
`)
	for _, ds := range []*eval.Dataset{y, j} {
		require.Len(t, ds.Cases, 2)
		require.Len(t, ds.Graders, 1)
		assert.Equal(t, "fr", ds.Cases[0].ID)
		assert.Equal(t, []string{"europe"}, ds.Cases[0].Tags)
		assert.EqualValues(t, 1, ds.Cases[0].Metadata["difficulty"])
		assert.Equal(t, "case-2", ds.Cases[1].ID)
		assert.JSONEq(t, `{"question": "capital of Peru?"}`, ds.Cases[1].Input)
		assert.Equal(t, map[string]any{"approve": "yes"}, ds.Cases[1].Answers)
	}
	assert.Equal(t, "capitals", y.Name)
	assert.Equal(t, 4, j.Cases[1].Line)
}
