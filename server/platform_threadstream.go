package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// lgThreadStream joins the thread's stream (GET /threads/{thread_id}/stream,
// the SDK's threads.joinStream): the events of its run in progress, each
// in the modes it was started with, then those of each run queued behind
// it, after a metadata event naming each run. A run started after the
// stream began that ended before the stream reached it shows as a
// truncated event (or is replayed from the Recorder). The stream
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
	var pending []*run // attached, not yet streamed, in order
	defer func() {
		for _, ru := range pending {
			ru.events.detach()
		}
	}()
	var last *run
	for {
		if len(pending) == 0 {
			pending = s.attachNext(key, last)
		}
		if len(pending) == 0 {
			break
		}
		ru := pending[0]
		pending, last = pending[1:], ru
		modes, subgraphs := []string{"values"}, false
		if ru.platform != nil {
			modes, subgraphs = ru.platform.modes, ru.platform.subgraphs
		}
		format := newPlatformFormat(ru.wf, ru.id, ru.thread, modes, subgraphs)
		ok := true
		if !opened {
			out, ok = s.openStream(w, r, rc, format)
			opened = true
		} else {
			ok = out.write(format.head()) == nil
		}
		ok = ok && s.streamRun(r, out, ru, after, format)
		ru.events.detach()
		if !ok {
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

// attachNext attaches to the runs of the thread key a thread's stream
// shows next, in order, and returns them: after the run last, those
// started or queued after it; with no last, the run in progress and those
// queued behind it. Attached, their events stay held until streamed.
func (s *Server) attachNext(key string, last *run) []*run {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.threads[key]
	if ts == nil {
		return nil
	}
	var next []*run
	if i := slices.Index(ts.runs, last); last != nil && i >= 0 {
		next = slices.Clone(ts.runs[i+1:])
	} else {
		if ts.active != nil && ts.active != last {
			next = append(next, ts.active)
		}
		next = append(next, ts.queue...)
	}
	for _, ru := range next {
		ru.events.attach()
	}
	return next
}
