package agentevent_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
)

type tooLarge struct {
	Path string
	Size int
}

func (w tooLarge) String() string { return fmt.Sprintf("%s is %d bytes", w.Path, w.Size) }

// A warning encodes and prints as what it carries, so that its payload is
// the one its producer gave: a sentence, or a value of its own.
func TestAWarningIsWhatItCarries(t *testing.T) {
	for _, tt := range []struct {
		value      any
		json, text string
	}{
		{"tools dropped: teleport", `"tools dropped: teleport"`, "tools dropped: teleport"},
		{tooLarge{Path: "project/big", Size: 10241}, `{"Path":"project/big","Size":10241}`, "project/big is 10241 bytes"},
	} {
		w := agentevent.Warning{Value: tt.value}
		raw, err := json.Marshal(w)
		require.NoError(t, err)
		assert.JSONEq(t, tt.json, string(raw))
		assert.Equal(t, tt.text, fmt.Sprint(w))
		assert.Equal(t, "warning", w.EventName())
	}
}

// The names are those that streams and recordings have always carried.
func TestTheEventNames(t *testing.T) {
	assert.Equal(t, "agent_created", agentevent.Created{}.EventName())
	assert.Equal(t, "agent_start", agentevent.Started{}.EventName())
	assert.Equal(t, "agent_end", agentevent.Ended{}.EventName())
	assert.Equal(t, "snapshot", agentevent.EventSnapshot)
}
