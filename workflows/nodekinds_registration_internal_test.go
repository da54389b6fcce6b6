package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes"
)

// addNodeKindForTest registers k as a node type until the test ends.
// Tests that call it must not run in parallel.
func addNodeKindForTest(t *testing.T, k nodeKind) {
	t.Helper()
	saved, savedByName := nodeKindList, nodeKinds
	nodeKindList = append(slices.Clone(saved), k)
	nodeKinds = nodeKindsByName(nodeKindList)
	reloadSchema()
	t.Cleanup(func() {
		nodeKindList, nodeKinds = saved, savedByName
		reloadSchema()
	})
}

// shoutKind is a node type of a test: it writes its prompt in capitals,
// with "!", to its output; it brings the prebuilt channel answer.
var shoutKind = nodeKind{
	name:     "shout",
	channels: []graph.Channel{nodes.Answer},
	fields:   "shoutNode",
	fieldsSchema: `{
  "type": "object",
  "additionalProperties": false,
  "required": ["prompt", "output"],
  "properties": {
    "type": true, "description": {"type": "string"},
    "prompt": {"type": "string", "minLength": 1},
    "output": {"type": "string", "minLength": 1}
  }
}`,
	check: func(f *File, ps *problems, n *fileNode) {
		if strings.Contains(n.Spec.Prompt, "!") {
			l := f.doc.loc(n.Ptr + "/prompt")
			ps.at(l.val, l.path, "a shout node adds the \"!\" itself")
		}
		n.output = f.channelRef(ps, n.Ptr+"/output", n.Spec.Output)
	},
	build: func(b *build, n *fileNode) (graph.NodeFunc, error) {
		return func(context.Context, graph.State) (graph.Command, error) {
			w, err := b.write(n.Name, n.output, strings.ToUpper(n.Spec.Prompt)+"!")
			if err != nil {
				return graph.Command{}, err
			}
			return graph.Update(w), nil
		}, nil
	},
}

const shoutFile = `apiVersion: coorflow/v1
name: shouting
nodes:
  loud: {type: shout, %s}
edges:
  - {from: start, to: loud}
  - {from: loud, to: end}
`

// TestANewNodeKindIsOneRegistration: a node type added as one entry of
// nodeKindList (issue 31, item 13: a node kind touched four or five
// files and the schema) is in the schema's node types, which the loader
// requires its fields of; its check runs, it brings its channels to the
// file's graph, and it is built and runs.
func TestANewNodeKindIsOneRegistration(t *testing.T) {
	addNodeKindForTest(t, shoutKind)

	var doc struct {
		Defs struct {
			Node struct {
				Properties struct {
					Type struct {
						Enum []string `json:"enum"`
					} `json:"type"`
				} `json:"properties"`
				AllOf []json.RawMessage `json:"allOf"`
			} `json:"node"`
			Shout *struct {
				Required []string `json:"required"`
			} `json:"shoutNode"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(Schema(), &doc))
	assert.Contains(t, doc.Defs.Node.Properties.Type.Enum, "shout", "Schema lists it")
	assert.Contains(t, string(doc.Defs.Node.AllOf[len(doc.Defs.Node.AllOf)-1]), `"then": {"$ref": "#/$defs/shoutNode"}`)
	require.NotNil(t, doc.Defs.Shout, "Schema defines its fields")
	assert.Equal(t, []string{"prompt", "output"}, doc.Defs.Shout.Required)

	_, err := Parse("shout.yaml", fmt.Appendf(nil, shoutFile, "output: answer"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `shout.yaml:4:3: nodes.loud: missing required field "prompt"`, "the loader requires its fields")
	_, err = Parse("shout.yaml", fmt.Appendf(nil, shoutFile, "prompt: hello, output: answer, tier: basic"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "tier"`, "and no other")
	_, err = Parse("shout.yaml", fmt.Appendf(nil, shoutFile, `prompt: "hello!", output: answer`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `shout.yaml:4:31: nodes.loud.prompt: a shout node adds the "!" itself`, "its check runs")

	f, err := Parse("shout.yaml", fmt.Appendf(nil, shoutFile, "prompt: hello, output: answer"))
	require.NoError(t, err, "its channel answer is in the graph without being declared")
	assert.Contains(t, kindsWith(nodes.Answer.Name()), "shout", "it brings answer")
	r, err := f.Compile(t.Context(), Env{})
	require.NoError(t, err)
	out, err := r.Invoke(t.Context(), nil, graph.Thread("t"))
	require.NoError(t, err)
	answer, _ := out.State.Value("answer")
	assert.Equal(t, "HELLO!", answer, "it is built and runs")
}

// TestTheSchemaListsTheNodeKinds: the node types of the file schema, the
// if/then list and the definitions of their fields come from
// nodeKindList, in its order, and the schema file editors read is
// current.
func TestTheSchemaListsTheNodeKinds(t *testing.T) {
	var doc struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(Schema(), &doc))
	var node struct {
		Properties struct {
			Type struct {
				Enum []string `json:"enum"`
			} `json:"type"`
		} `json:"properties"`
		AllOf []struct {
			If struct {
				Properties struct {
					Type struct {
						Const string `json:"const"`
					} `json:"type"`
				} `json:"properties"`
			} `json:"if"`
			Then struct {
				Ref string `json:"$ref"`
			} `json:"then"`
		} `json:"allOf"`
	}
	require.NoError(t, json.Unmarshal(doc.Defs["node"], &node))
	var names, ifs, refs []string
	for _, k := range nodeKindList {
		names = append(names, k.name)
		var want, got any
		require.NoError(t, json.Unmarshal([]byte(k.fieldsSchema), &want), k.name)
		require.NoError(t, json.Unmarshal(doc.Defs[k.fields], &got), k.name)
		assert.Equal(t, want, got, "the definition of %s's fields", k.name)
	}
	for _, a := range node.AllOf {
		ifs = append(ifs, a.If.Properties.Type.Const)
		refs = append(refs, a.Then.Ref)
	}
	assert.Equal(t, names, node.Properties.Type.Enum)
	assert.Equal(t, names, ifs)
	for i, k := range nodeKindList {
		assert.Equal(t, "#/$defs/"+k.fields, refs[i])
	}
	assert.ElementsMatch(t, slices.Collect(maps.Keys(nodeKinds)), names)

	assert.Equal(t, string(schemaFile), string(Schema()),
		"workflows/schema/coorflow-v1.schema.json lists other node types than nodeKindList: regenerate it with\n  go run ./cmd/coorflow schema > workflows/schema/coorflow-v1.schema.json")
}
