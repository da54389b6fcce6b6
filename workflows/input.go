package workflows

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/graph"
)

// Input turns text into a write to channel, for a run of r (the file's
// compiled graph): a text channel takes the text as it is; a channel of
// another type takes JSON (a bare word is taken as a string when the
// channel's type allows any), checked against the channel's schema.
func (f *File) Input(r *graph.Runnable, channel, text string) ([]graph.Write, error) {
	c, ok := f.byName[channel]
	if !ok {
		return nil, fmt.Errorf("workflows: %s has no channel %q", f.path, channel)
	}
	var v any
	switch c.shape.kind {
	case "string":
		v = text
	case "any":
		if json.Unmarshal([]byte(text), &v) != nil {
			v = text
		}
	default:
		if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &v); err != nil {
			return nil, fmt.Errorf("workflows: channel %q holds %s values: give JSON (%v)", channel, c.shape.kind, err)
		}
	}
	if err := c.check(v); err != nil {
		return nil, fmt.Errorf("workflows: %w", err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("workflows: channel %q: %w", channel, err)
	}
	return r.DecodeInput(map[string]json.RawMessage{channel: raw})
}

// Write returns a write of v to the channel called name, for the Go
// functions of go nodes: the graph decodes it through the channel it
// declares (appended, merged or summed by its reducer), and the value is
// checked against the channel's schema when the node returns.
func Write(name string, v any) graph.Write {
	k, _ := graph.NewDynamicKey(name, "last")
	return k.Set(v)
}
