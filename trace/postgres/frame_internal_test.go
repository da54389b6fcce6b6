package postgres

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/runs/eventlog"
	"github.com/coorflow/coorflow/trace"
)

func TestAnEventIsADescribedFrameAndBack(t *testing.T) {
	e := trace.Event{RunID: "r", Seq: 7, Kind: "model_call", Path: "wf/a", Node: "a", Step: 2, Attempt: 1,
		Time: time.Date(2026, 12, 2, 10, 0, 0, 123456000, time.UTC), Duration: time.Second, Agent: "x",
		Payload: json.RawMessage(`{"b":1, "a":2}`), Error: "e", Hash: "h", Response: json.RawMessage(`"only a response"`)}
	f, err := toFrame(e)
	require.NoError(t, err)
	assert.Equal(t, "model_call", f.Name)
	assert.Equal(t, "wf/a", f.Path)
	assert.Equal(t, []byte(e.Payload), f.Data, "the payload byte for byte")
	got, err := fromFrame("r", f)
	require.NoError(t, err)
	assert.Equal(t, e, got)
}

func TestACorruptFrameSaysWhichEvent(t *testing.T) {
	for _, c := range []struct {
		name string
		f    eventlog.Frame
		want string
	}{
		{"meta", eventlog.Frame{ID: 3, Meta: []byte(`{`)}, `postgres: corrupt event 3 of run "r": unexpected end of JSON input`},
		{"short body", eventlog.Frame{ID: 4, Meta: []byte(`{}`), Body: []byte{0, 1}}, `postgres: corrupt event 4 of run "r": a body of 2 bytes`},
		{"long request", eventlog.Frame{ID: 5, Meta: []byte(`{}`), Body: []byte{0, 0, 0, 9, 'x'}},
			`postgres: corrupt event 5 of run "r": a request of 9 bytes in a body of 5`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := fromFrame("r", c.f)
			assert.EqualError(t, err, c.want)
		})
	}
}
