package structured_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/structured"
)

type Base struct {
	ID string `json:"id" jsonschema:"required"`
}

type step struct {
	Title    string   `json:"title" jsonschema:"required,description=What to do, in a few words"`
	Kind     string   `json:"kind" jsonschema:"required,enum=research|processing"`
	Priority int      `json:"priority,omitempty" jsonschema:"enum=1|2|3"`
	Score    float64  `json:"score" jsonschema:"minimum=0,maximum=1"`
	Tags     []string `json:"tags,omitempty" jsonschema:"enum=web|code"`
	Skipped  string   `json:"-"`
	internal string   //lint:ignore U1000 an unexported field the schema must leave out
}

type plan struct {
	Base
	Thought  string            `json:"thought"`
	Steps    []step            `json:"steps" jsonschema:"required"`
	Meta     map[string]int    `json:"meta,omitempty"`
	Due      *time.Time        `json:"due,omitempty"`
	Extra    json.RawMessage   `json:"extra,omitempty"`
	Anything any               `json:"anything,omitempty"`
	Done     bool              `json:"done"`
	Blob     []byte            `json:"blob,omitempty"`
	Labels   map[string]string `json:"labels,omitempty" jsonschema:"format=x-labels"`
	NoTag    uint8
}

func TestSchema(t *testing.T) {
	got, err := structured.SchemaFor[plan]()
	require.NoError(t, err)
	want := `{"type":"object","properties":{` +
		`"id":{"type":"string"},` +
		`"thought":{"type":"string"},` +
		`"steps":{"type":"array","items":{"type":"object","properties":{` +
		`"title":{"type":"string","description":"What to do, in a few words"},` +
		`"kind":{"type":"string","enum":["research","processing"]},` +
		`"priority":{"type":"integer","enum":[1,2,3]},` +
		`"score":{"type":"number","minimum":0,"maximum":1},` +
		`"tags":{"type":"array","items":{"type":"string","enum":["web","code"]}}},` +
		`"required":["title","kind"],"additionalProperties":false}},` +
		`"meta":{"type":"object","additionalProperties":{"type":"integer"}},` +
		`"due":{"type":"string","format":"date-time"},` +
		`"extra":{},"anything":{},"done":{"type":"boolean"},"blob":{"type":"string"},` +
		`"labels":{"type":"object","format":"x-labels","additionalProperties":{"type":"string"}},` +
		`"NoTag":{"type":"integer"}},` +
		`"required":["id","steps"],"additionalProperties":false}`
	assert.JSONEq(t, want, string(got))
	assert.Equal(t, want, string(got), "properties keep field order")
}

func TestSchemaBasicTypes(t *testing.T) {
	tests := []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[string](), `{"type":"string"}`},
		{reflect.TypeFor[int64](), `{"type":"integer"}`},
		{reflect.TypeFor[float32](), `{"type":"number"}`},
		{reflect.TypeFor[[]bool](), `{"type":"array","items":{"type":"boolean"}}`},
		{reflect.TypeFor[[2]int](), `{"type":"array","items":{"type":"integer"}}`},
		{reflect.TypeFor[map[string]any](), `{"type":"object","additionalProperties":{}}`},
		{reflect.TypeFor[*step](), ""},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			got, err := structured.Schema(tt.typ)
			require.NoError(t, err)
			if tt.want != "" {
				assert.Equal(t, tt.want, string(got))
			}
		})
	}
}

type recursive struct {
	Children []recursive `json:"children"`
}

type badOption struct {
	A string `json:"a" jsonschema:"requird"`
}

type badEnum struct {
	N int `json:"n" jsonschema:"enum=one|two"`
}

type withChan struct {
	C chan int `json:"c"`
}

type intKeys struct {
	M map[int]string `json:"m"`
}

// Untagged, so that go vet's structtag check does not object to the
// conflicts these types exist to test.
type embeddedX1 struct {
	X string
}

type embeddedX2 struct {
	X int
}

type duplicate struct {
	embeddedX1
	embeddedX2
}

type shadowed struct {
	embeddedX1
	X bool `jsonschema:"required"`
	Y int
}

type shadowedAfter struct {
	X bool `jsonschema:"required"`
	embeddedX1
	Y int
}

func TestSchemaShallowerFieldWins(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[shadowed](), reflect.TypeFor[shadowedAfter]()} {
		got, err := structured.Schema(typ)
		require.NoError(t, err)
		assert.Equal(t, `{"type":"object","properties":{"X":{"type":"boolean"},"Y":{"type":"integer"}},`+
			`"required":["X"],"additionalProperties":false}`, string(got), typ.String())
	}
}

type badMinimum struct {
	F float64 `json:"f" jsonschema:"minimum=low"`
}

func TestSchemaErrors(t *testing.T) {
	tests := []struct {
		typ     reflect.Type
		message string
	}{
		{reflect.TypeFor[recursive](), "recursive type structured_test.recursive"},
		{reflect.TypeFor[badOption](), `structured_test.badOption.A: jsonschema tag: unknown option "requird"`},
		{reflect.TypeFor[badEnum](), `badEnum.N: jsonschema tag: enum value "one"`},
		{reflect.TypeFor[withChan](), "withChan.C: type chan int has no JSON form"},
		{reflect.TypeFor[intKeys](), "map keys must be strings"},
		{reflect.TypeFor[duplicate](), `duplicate property "X" at the same embedding depth`},
		{reflect.TypeFor[badMinimum](), "badMinimum.F: jsonschema tag"},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			_, err := structured.Schema(tt.typ)
			assert.ErrorIs(t, err, structured.ErrSchema)
			assert.ErrorContains(t, err, tt.message)
		})
	}
}
