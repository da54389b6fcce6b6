package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/tools"
)

type bookingWindow struct {
	From string `json:"from" jsonschema:"required,format=date"`
	To   string `json:"to,omitempty" jsonschema:"format=date"`
}

type guest struct {
	Name string `json:"name" jsonschema:"required"`
	Age  int    `json:"age,omitempty" jsonschema:"minimum=0"`
}

type bookingArgs struct {
	City   string         `json:"city" jsonschema:"required,description=The city to stay in, as its English name"`
	Rooms  int            `json:"rooms,omitempty" jsonschema:"minimum=1,maximum=4,description=How many rooms; one when left out"`
	Kind   string         `json:"kind,omitempty" jsonschema:"enum=hotel|hostel"`
	When   bookingWindow  `json:"when" jsonschema:"required"`
	Guests []guest        `json:"guests,omitempty"`
	Budget *float64       `json:"budget,omitempty"`
	Notes  map[string]int `json:"notes,omitempty"`
}

func book(_ context.Context, a bookingArgs) (string, error) {
	return fmt.Sprintf("%s, %d room(s), from %s, %d guest(s)", a.City, max(a.Rooms, 1), a.When.From, len(a.Guests)), nil
}

func TestTypedDerivesTheSchemaFromTheArgumentType(t *testing.T) {
	tl := tools.Typed("book", "Books a room.", nil, book)
	want := `{"type":"object","properties":{` +
		`"city":{"type":"string","description":"The city to stay in, as its English name"},` +
		`"rooms":{"type":"integer","description":"How many rooms; one when left out","minimum":1,"maximum":4},` +
		`"kind":{"type":"string","enum":["hotel","hostel"]},` +
		`"when":{"type":"object","properties":{"from":{"type":"string","format":"date"},"to":{"type":"string","format":"date"}},` +
		`"required":["from"],"additionalProperties":false},` +
		`"guests":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},` +
		`"required":["name"],"additionalProperties":false}},` +
		`"budget":{"type":"number"},` +
		`"notes":{"type":"object","additionalProperties":{"type":"integer"}}},` +
		`"required":["city","when"],"additionalProperties":false}`
	assert.Equal(t, want, string(tl.Schema()))

	reg, err := tools.NewRegistry(tl)
	require.NoError(t, err, "a derived schema compiles")
	def := tools.LLMTool(tl)
	city := def.Function.Parameters.(map[string]any)["properties"].(map[string]any)["city"].(map[string]any)
	assert.Equal(t, "The city to stay in, as its English name", city["description"], "the model reads the field descriptions")

	res := reg.Run(t.Context(), "book", json.RawMessage(`{"city":"Lyon","when":{"from":"2026-05-01"},"guests":[{"name":"Ada"}]}`), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, "Lyon, 1 room(s), from 2026-05-01, 1 guest(s)", res.Output, "optional fields may be left out")

	res = reg.Run(t.Context(), "book", json.RawMessage(`{"city":"Lyon","rooms":9,"when":{},"guests":[{"age":3}],"extra":true}`), tools.RunOptions{})
	require.Equal(t, tools.StatusFailed, res.Status)
	var ae *tools.ArgumentError
	require.ErrorAs(t, res.Err, &ae)
	var problems []string
	for _, p := range ae.Problems {
		problems = append(problems, p.String())
	}
	assert.ElementsMatch(t, []string{
		"additionalProperties 'extra' not allowed",
		"rooms: must be <= 4 but found 9",
		"when: missing properties: 'from'",
		"guests/0: missing properties: 'name'",
	}, problems, "the derived schema checks nested fields before the tool runs")

	res = reg.Run(t.Context(), "book", json.RawMessage(`{"city":"Lyon","when":{"from":"2026-05-01"},"kind":"tent"}`), tools.RunOptions{})
	assert.Equal(t, "Error: invalid arguments for tool \"book\":\n"+
		"- kind: value must be one of \"hotel\", \"hostel\"\n"+
		"The arguments must match this JSON Schema: "+want+"\n"+
		"Correct the arguments and call the tool again.", res.Text())
}

type tree struct {
	Label    string `json:"label"`
	Children []tree `json:"children"`
}

func TestTypedWithATypeThatHasNoSchemaIsRefused(t *testing.T) {
	tl := tools.Typed("walk", "Walks a tree.", nil, func(context.Context, tree) (string, error) { return "walked", nil })
	_, err := tools.NewRegistry(tl)
	require.ErrorIs(t, err, tools.ErrInvalidSchema)
	assert.EqualError(t, err, `tools: invalid argument schema of tool "walk": tools_test.tree.Children[]: recursive type tools_test.tree is not supported`)

	res := tools.Run(t.Context(), tl, json.RawMessage(`{"label":"root"}`), tools.RunOptions{})
	assert.Equal(t, tools.StatusFailed, res.Status, "the tool is not called")
	assert.ErrorIs(t, res.Err, tools.ErrInvalidSchema)
}
