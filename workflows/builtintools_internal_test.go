package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/tools"
)

// reloadSchema makes the file schema again from the registrations.
func reloadSchema() {
	schemaJSON = sync.OnceValue(func() []byte { return withRegistrations(schemaFile) })
	fileSchema = sync.OnceValues(compileFileSchema)
}

// addBuiltinToolForTest registers b as a built-in tool until the test
// ends. Tests that call it must not run in parallel.
func addBuiltinToolForTest(t *testing.T, b builtinTool) {
	t.Helper()
	saved := builtinTools
	builtinTools = append(slices.Clone(saved), b)
	reloadSchema()
	t.Cleanup(func() {
		builtinTools = saved
		reloadSchema()
	})
}

// greetTool is a built-in tool of a test: it answers "hello from" its
// base_url, which it requires and which must be an http URL.
var greetTool = builtinTool{
	name: "greet",
	schema: `{
  "type": "object",
  "additionalProperties": false,
  "required": ["base_url"],
  "properties": {"base_url": {"type": "string"}, "timeout": {"$ref": "#/$defs/duration"}}
}`,
	check: func(f *File, ps *problems, t named[toolSpec]) {
		if !strings.HasPrefix(t.Spec.BaseURL, "http") {
			l := f.doc.loc(t.Ptr + "/base_url")
			ps.at(l.val, l.path, "greet needs an http URL, not %q", t.Spec.BaseURL)
		}
	},
	build: func(_ *File, t named[toolSpec], _ toolBuild) (tools.Tool, error) {
		return tools.Func("greet", "Greets.", nil, func(context.Context, json.RawMessage) (string, error) {
			return "hello from " + t.Spec.BaseURL, nil
		}), nil
	},
	exportAs: `{base_url: "http://greet.example"}`,
	effects: func(_ *File, t named[toolSpec], add func(kind, what, ptr string)) {
		add(EffectURL, t.Spec.BaseURL+" (greet)", t.Ptr+"/base_url")
	},
}

const greetFile = `apiVersion: coorflow/v1
name: greeting
state: {question: {type: string}, answer: {type: string}}
input: question
tools:
  greet: %s
nodes:
  agent: {type: react, prompt: "{{ state.question }}", output: answer, tools: [greet]}
edges:
  - {from: start, to: agent}
  - {from: agent, to: end}
`

// TestANewBuiltinToolIsOneRegistration: a tool added as one entry of
// builtinTools (issue 31, item 13: a tool touched check.go, toolset.go,
// export.go, effects.go and the schema) is in the schema the loader
// validates with and editors read, is checked, built into a node's
// toolset, declared by Export when an agent uses it, and has its effects
// listed.
func TestANewBuiltinToolIsOneRegistration(t *testing.T) {
	addBuiltinToolForTest(t, greetTool)

	var doc struct {
		Defs struct {
			Tools struct {
				Properties map[string]struct {
					Required []string `json:"required"`
				} `json:"properties"`
			} `json:"tools"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(Schema(), &doc))
	require.Contains(t, doc.Defs.Tools.Properties, "greet", "Schema lists it")
	assert.Equal(t, []string{"base_url"}, doc.Defs.Tools.Properties["greet"].Required)
	assert.Contains(t, BuiltinTools(), "greet")

	_, err := Parse("greet.yaml", fmt.Appendf(nil, greetFile, "{}"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `greet.yaml:6:3: tools.greet: missing required field "base_url"`, "the loader validates with its schema")
	_, err = Parse("greet.yaml", fmt.Appendf(nil, greetFile, "{base_url: ftp://x}"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `greet.yaml:6:21: tools.greet.base_url: greet needs an http URL, not "ftp://x"`, "its check runs")

	f, err := Parse("greet.yaml", fmt.Appendf(nil, greetFile, "{base_url: http://greet.test}"))
	require.NoError(t, err)
	assert.Empty(t, f.Unregistered(), "a built-in tool needs nothing from the program")
	assert.Equal(t, []Effect{{Kind: EffectURL, What: "http://greet.test (greet)", File: "greet.yaml", Line: 6, Path: "tools.greet.base_url"}}, f.Effects())

	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"agent": {
		{ToolCalls: []scripted.ToolCall{{Name: "greet", Arguments: `{}`}}},
		{Text: "greeted"},
	}}})
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model, Profile: llm.Profile{Model: "scripted"}}})
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), Env{Models: ms})
	require.NoError(t, err)
	in, err := f.Input(r, "question", "greet me")
	require.NoError(t, err)
	out, err := r.Invoke(t.Context(), in, graph.Thread("t"))
	require.NoError(t, err)
	answer, _ := out.State.Value("answer")
	assert.Equal(t, "greeted", answer)
	calls := model.CallsFor("agent")
	require.Len(t, calls, 2)
	assert.Contains(t, fmt.Sprint(calls[1].Messages), "hello from http://greet.test", "the node's toolset has the built tool")

	src, err := Builtin("coor")
	require.NoError(t, err)
	exported, err := src.Export(filepath.Join(t.TempDir(), "greet.yaml"), Production{Name: "greeting",
		Plan:   &plan.Plan{Title: "Greet", Steps: []plan.Step{{ID: "s1", AgentName: "greeter", Title: "Greet", Description: "Greet."}}},
		Agents: []factory.Agent{{Name: "greeter", Role: "Greeter", Tools: []string{"greet"}, Prompt: "You greet."}}})
	require.NoError(t, err, "the exported file loads")
	assert.Contains(t, string(exported), "tools:\n  greet: {base_url: \"http://greet.example\"}\n", "Export declares it as its entry says")
}

// TestTheSchemaListsTheBuiltinTools: the tools section of the file
// schema comes from builtinTools, and the schema file editors read is
// current.
func TestTheSchemaListsTheBuiltinTools(t *testing.T) {
	var doc struct {
		Defs struct {
			Tools struct {
				Properties json.RawMessage `json:"properties"`
			} `json:"tools"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(Schema(), &doc))
	var names []string
	dec := json.NewDecoder(strings.NewReader(string(doc.Defs.Tools.Properties)))
	_, err := dec.Token()
	require.NoError(t, err)
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		names = append(names, tok.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	var want []string
	for _, b := range builtinTools {
		want = append(want, b.name)
	}
	assert.Equal(t, want, names, "the built-in tools, in the table's order")

	old := "\"tools\": {\n      \"type\": \"object\",\n      \"description\": \"d\",\n      \"properties\": {\n        \"gone\": {}\n      },\n      \"additionalProperties\": {}"
	got := string(withRegistrations([]byte(old)))
	assert.NotContains(t, got, "gone", "the list is replaced whatever it held")
	assert.Contains(t, got, "\n        \"python\": {\n          \"type\": [\"object\", \"null\"],")

	assert.Equal(t, string(schemaFile), string(Schema()),
		"workflows/schema/coorflow-v1.schema.json lists other tools than builtinTools: regenerate it with\n  go run ./cmd/coorflow schema > workflows/schema/coorflow-v1.schema.json")
}
