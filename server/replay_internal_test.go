package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replayed replays the recorded events of ru in (after, until] as a
// stream does, and returns the ids it sent and where it got to.
func replayed(t *testing.T, s *Server, ru *run, after, until int64) ([]int64, int64) {
	t.Helper()
	w := httptest.NewRecorder()
	out := sseWriter{s: s, w: w, rc: http.NewResponseController(w)}
	got, err := s.replayRecorded(httptest.NewRequest(http.MethodGet, "/", nil), out, ru, after, until, nativeFormat{})
	require.NoError(t, err)
	var ids []int64
	for line := range strings.Lines(w.Body.String()) {
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			var ev Event
			require.NoError(t, json.Unmarshal([]byte(v), &ev))
			ids = append(ids, ev.ID)
		}
	}
	return ids, got
}

func seqs(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// A stream replays the recorded events it dropped page after page, up to
// the last it asks for, and says where it got to when a page cannot be
// read: after the last event it sent.
func TestAStreamReplaysEveryPageOfTheRecording(t *testing.T) {
	s, ru := recordedRun(t, 25, 4, 0)
	ids, got := replayed(t, s, ru, 3, 22)
	assert.Equal(t, seqs(4, 22), ids, "five pages of four")
	assert.Equal(t, int64(22), got)

	s, ru = recordedRun(t, 25, 4, 3)
	ids, got = replayed(t, s, ru, 3, 22)
	assert.Equal(t, seqs(4, 11), ids, "two pages, the third failed")
	assert.Equal(t, int64(11), got, "the stream goes on after what it sent")
}
