package workflows

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/nodes"
)

// TestTheNodeKindTableCoversEveryTypeAndEveryPrebuiltChannel checks the
// table against the schema's node types and package nodes' channels: a
// type missing from it would bring no channels and no model, and a
// channel no type brings could never be in a file's graph but declared.
func TestTheNodeKindTableCoversEveryTypeAndEveryPrebuiltChannel(t *testing.T) {
	var schema struct {
		Defs struct {
			Node struct {
				Properties struct {
					Type struct {
						Enum []string `json:"enum"`
					} `json:"type"`
				} `json:"properties"`
			} `json:"node"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(Schema(), &schema))
	types := schema.Defs.Node.Properties.Type.Enum
	require.NotEmpty(t, types)
	assert.ElementsMatch(t, types, slices.Collect(maps.Keys(nodeKinds)))

	brought := map[string]bool{}
	for _, k := range nodeKinds {
		for _, c := range k.channels {
			brought[c.Name()] = true
		}
	}
	var all []string
	for _, c := range nodes.Channels() {
		all = append(all, c.Name())
	}
	assert.ElementsMatch(t, all, slices.Collect(maps.Keys(brought)))
}
