package server

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/coorflow/coorflow/runs"
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
// progress after that event. Among replicas (Config.Replicas) the stream
// follows the thread's runs through their shared rows, wherever each
// runs, and streams each from the shared event log (threadStreamShared).
func (s *Server) lgThreadStream(w http.ResponseWriter, r *http.Request) {
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
	if s.cfg.Replicas != nil {
		s.threadStreamShared(w, r, key, after)
		return
	}
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
	var next []*run
	s.manager.WithThread(key, func(ts runs.ThreadRuns) {
		kept := runsOf(ts.Kept)
		if i := slices.Index(kept, last); last != nil && i >= 0 {
			next = kept[i+1:]
		} else {
			if ts.Active != nil && runOf(ts.Active) != last {
				next = append(next, runOf(ts.Active))
			}
			next = append(next, runsOf(ts.Queued)...)
		}
		for _, ru := range next {
			ru.events.attach() // before any of them ends: its events stay held
		}
	})
	return next
}

// threadStreamShared is lgThreadStream among replicas: the runs of the
// thread key in the order the replicas share them (nextShared), each
// streamed from the shared event log in the modes it was started with.
func (s *Server) threadStreamShared(w http.ResponseWriter, r *http.Request, key string, after int64) {
	ctx := r.Context()
	rc := http.NewResponseController(w)
	var out sseWriter
	opened := false
	last := ""
	for {
		sr, err := s.nextShared(ctx, key, last)
		if err != nil {
			if !opened {
				writeError(w, s.internal(r, err))
			} else {
				s.log.ErrorContext(ctx, "server: the next run of a thread's stream", "request_id", requestID(ctx), "err", err)
			}
			return
		}
		if sr == nil {
			break
		}
		last = sr.ID
		modes, subgraphs := []string{"values"}, false
		if req, err := sr.request(); err == nil && req.Platform != nil {
			modes, _ = parseModes(req.Platform.StreamMode, "stream_mode")
			subgraphs = req.Platform.StreamSubgraphs
		}
		wf := s.cfg.Workflows[sr.Workflow]
		format := newPlatformFormat(wf, sr.ID, sr.Thread, modes, subgraphs)
		ok := true
		if !opened {
			out, ok = s.openStream(w, r, rc, format)
			opened = true
		} else {
			ok = out.write(format.head()) == nil
		}
		if !ok || !s.streamShared(r, out, sr.ID, wf, key, after, format) {
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

// nextShared returns the run of the thread key a thread's stream among
// replicas shows next, as attachNext does in one process: after the run
// last, the one the replicas stored after it; with no last (or when last
// is forgotten), the oldest run queued or running. Nil when none.
func (s *Server) nextShared(ctx context.Context, key, last string) (*SharedRun, error) {
	if last != "" {
		runs, err := s.cfg.Replicas.Runs(ctx, key)
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(runs, func(sr SharedRun) bool { return sr.ID == last }); i >= 0 {
			if i+1 < len(runs) {
				return &runs[i+1], nil
			}
			return nil, nil
		}
	}
	open, err := s.cfg.Replicas.Activity(ctx, key)
	if err != nil {
		return nil, err
	}
	for i := range open {
		if !ended(open[i].Status) && open[i].ID != last {
			return &open[i], nil
		}
	}
	return nil, nil
}
