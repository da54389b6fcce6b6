package workflows

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
)

// TestTheSchemaListsTheRegisteredProviders: the file schema's providers
// come from llm's provider table (issue 31, item 13: a new provider is
// one registration), and the schema file editors read is current.
func TestTheSchemaListsTheRegisteredProviders(t *testing.T) {
	var doc struct {
		Defs struct {
			Model struct {
				Properties struct {
					Provider struct {
						Enum []llm.Provider `json:"enum"`
					} `json:"provider"`
				} `json:"properties"`
			} `json:"model"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(Schema(), &doc))
	assert.Equal(t, llm.Providers(), doc.Defs.Model.Properties.Provider.Enum)

	old := `{"required": ["provider", "model"], "properties": {"provider": {"enum": ["old"]}}, "search": {"provider": {"enum": ["tavily"]}}}`
	assert.JSONEq(t, `{"required": ["provider", "model"], "properties": {"provider": {"enum": `+string(mustJSON(t, llm.Providers()))+`}}, "search": {"provider": {"enum": ["tavily"]}}}`,
		string(withRegistrations([]byte(old))), "the model's list is replaced whatever it held, and no other")

	assert.True(t, bytes.Equal(schemaFile, Schema()),
		"workflows/schema/coorflow-v1.schema.json lists other providers than llm's table: regenerate it with\n  go run ./cmd/coorflow schema > workflows/schema/coorflow-v1.schema.json")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
