package server

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// lgThreadStream joins the thread's stream (GET /threads/{thread_id}/stream,
// the SDK's threads.joinStream): the events of its run in progress, each
// in the modes it was started with, then those of each run queued behind
// it as it starts, after a metadata event naming each run. The stream
// ends when the thread has no run in progress left (at once when it has
// none): LangGraph's stays open for the thread's later runs. stream_mode
// is the thread's stream mode: run_modes (the default) is served,
// lifecycle and state_update are not. Last-Event-ID resumes the run in
// progress after that event. Not served with Config.Replicas.
func (s *Server) lgThreadStream(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Replicas != nil {
		writeError(w, errorf(http.StatusNotImplemented, CodeNotServed,
			"coorflow does not serve GET /threads/{thread_id}/stream of the LangGraph Platform API with replicas: join a run's stream (GET /threads/{thread_id}/runs/{run_id}/stream)"))
		return
	}
	if raw := queryModes(r.URL.Query()["stream_mode"]); raw != nil {
		var modes []string
		_ = json.Unmarshal(raw, &modes)
		for _, m := range modes {
			if m != "run_modes" {
				writeError(w, fieldErrorf(CodeInvalidQuery, "stream_mode", "query parameter \"stream_mode\": a thread's stream serves run_modes, not %q", m))
				return
			}
		}
	}
	after := int64(0)
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if _, err := fmt.Sscan(v, &after); err != nil || after < 0 {
			writeError(w, fieldErrorf(CodeInvalidQuery, "Last-Event-ID", "Last-Event-ID must be an event id (an integer >= 0), not %q", v))
			return
		}
	}
	th, _, ok := s.platformThread(w, r)
	if !ok {
		return
	}
	key := threadKey(ownerFrom(r.Context()), th.ID)
	rc := http.NewResponseController(w)
	var out sseWriter
	opened := false
	var last *run
	for {
		ru := s.currentRun(key)
		if ru == nil || ru == last {
			break
		}
		last = ru
		modes, subgraphs := []string{"values"}, false
		if ru.platform != nil {
			modes, subgraphs = ru.platform.modes, ru.platform.subgraphs
		}
		format := newPlatformFormat(ru.wf, ru.id, ru.thread, modes, subgraphs)
		if !opened {
			if out, ok = s.openStream(w, r, rc, format); !ok {
				return
			}
			opened = true
		} else if out.write(format.head()) != nil {
			return
		}
		ru.events.attach()
		ended := s.streamRun(r, out, ru, after, format)
		ru.events.detach()
		if !ended {
			return
		}
		after = 0
	}
	if !opened {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
	}
}

// currentRun is the run in progress on the thread key, else the first
// queued on it, or nil.
func (s *Server) currentRun(key string) *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.threads[key]
	switch {
	case ts == nil:
		return nil
	case ts.active != nil:
		return ts.active
	case len(ts.queue) > 0:
		return ts.queue[0]
	}
	return nil
}
