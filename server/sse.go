package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// kindFilter selects the event kinds a stream sends; nil sends all.
type kindFilter map[graph.EventKind]bool

var kindsByName = func() map[string]graph.EventKind {
	m := make(map[string]graph.EventKind)
	for k := graph.EventKind(1); k < 64; k++ {
		if name := k.String(); name != "unknown" {
			m[name] = k
		}
	}
	return m
}()

// parseKinds reads ?kinds=node_end,update.
func parseKinds(r *http.Request) (kindFilter, *apiError) {
	v := r.URL.Query().Get("kinds")
	if v == "" {
		return nil, nil
	}
	f := make(kindFilter)
	for name := range strings.SplitSeq(v, ",") {
		k, ok := kindsByName[strings.TrimSpace(name)]
		if !ok {
			return nil, fieldErrorf(CodeInvalidQuery, "kinds", "query parameter \"kinds\": unknown event kind %q (known: %s)",
				name, strings.Join(sortedKeys(kindsByName), ", "))
		}
		f[k] = true
	}
	return f, nil
}

// handleJoinStream attaches to a run's events: those after ?after=N or
// the Last-Event-ID header (all that are buffered when neither is set),
// then the live ones, then an end event.
func (s *Server) handleJoinStream(w http.ResponseWriter, r *http.Request) {
	ru := s.runFor(w, r)
	if ru == nil {
		return
	}
	after := int64(0)
	param, v := "after", r.URL.Query().Get("after")
	if v == "" {
		param, v = "Last-Event-ID", r.Header.Get("Last-Event-ID")
	}
	if v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, fieldErrorf(CodeInvalidQuery, param, "%s must be an event id (an integer >= 0), not %q", param, v))
			return
		}
		after = n
	}
	kinds, e := parseKinds(r)
	if e != nil {
		writeError(w, e)
		return
	}
	s.serveEvents(w, r, ru, after, kinds)
}

// serveEvents writes the run's events after id after as server-sent
// events until the run ends (then an end event) or the client leaves. A
// client that leaves does not stop the run.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, ru *run, after int64, kinds kindFilter) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's WriteTimeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	heartbeat := time.NewTicker(s.cfg.Heartbeat)
	defer heartbeat.Stop()
	var buf []frame
	for {
		frames, dropped, closed, wake := ru.events.since(after, buf[:0])
		buf = frames
		if dropped > 0 {
			data, _ := json.Marshal(map[string]int64{"dropped": dropped, "first_id": after + dropped + 1})
			if _, err := w.Write(sseFrame("", EventTruncated, data)); err != nil {
				return
			}
		}
		for _, f := range frames {
			after = f.id
			if kinds != nil && !kinds[f.kind] {
				continue
			}
			if _, err := w.Write(f.data); err != nil {
				return
			}
		}
		if len(frames) == 0 && closed {
			data, _ := json.Marshal(ru.view())
			_, _ = w.Write(sseFrame(strconv.FormatInt(after+1, 10), EventEnd, data))
			_ = rc.Flush()
			return
		}
		if dropped > 0 || len(frames) > 0 {
			if rc.Flush() != nil {
				return
			}
			continue
		}
		select {
		case <-wake:
		case <-heartbeat.C:
			if _, err := w.Write([]byte(": ping\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}
