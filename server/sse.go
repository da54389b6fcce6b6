package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
)

// kindFilter selects the events a stream sends by name (graph.Event.Name);
// nil sends all.
type kindFilter map[string]bool

// coorflowEvents are the names of the custom events coorflow's own
// packages publish.
var coorflowEvents = []string{
	llm.EventToken, llm.EventModelCall, tools.EventToolCall, tools.EventToolResult,
	agentevent.EventCreated, agentevent.EventStart, agentevent.EventEnd, agentevent.EventSnapshot, agentevent.EventWarning,
}

// eventNames returns the event names ?kinds= accepts: the engine's kinds,
// the custom events of coorflow's packages and those of Config.EventNames.
func eventNames(extra []string) map[string]bool {
	known := make(map[string]bool)
	for k := graph.EventKind(1); k.String() != "unknown"; k++ {
		known[k.String()] = true
	}
	for _, name := range slices.Concat(coorflowEvents, extra) {
		known[name] = true
	}
	return known
}

// parseKinds reads ?kinds=node_end,update.
func (s *Server) parseKinds(r *http.Request) (kindFilter, *apiError) {
	v := r.URL.Query().Get("kinds")
	if v == "" {
		return nil, nil
	}
	f := make(kindFilter)
	for name := range strings.SplitSeq(v, ",") {
		name = strings.TrimSpace(name)
		if !s.eventNames[name] {
			return nil, fieldErrorf(CodeInvalidQuery, "kinds", "query parameter \"kinds\": unknown event kind %q (known: %s)",
				name, strings.Join(sortedKeys(s.eventNames), ", "))
		}
		f[name] = true
	}
	return f, nil
}

// handleJoinStream attaches to a run's events: those after ?after=N or
// the Last-Event-ID header (all that are buffered when neither is set),
// then the live ones, then an end event.
func (s *Server) handleJoinStream(w http.ResponseWriter, r *http.Request) {
	p, ok := s.placedFor(w, r)
	if !ok {
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
	kinds, e := s.parseKinds(r)
	if e != nil {
		writeError(w, e)
		return
	}
	s.serve(w, r, p, after, nativeFormat{kinds})
}

// streamFormat renders a run's events for one stream: coorflow's own
// (nativeFormat) or the LangGraph Platform's (platformFormat).
type streamFormat interface {
	// filter selects the events to read back from a recording (nil: all).
	filter() kindFilter
	// head is written before the events (nil: nothing).
	head() []byte
	// event renders one of the run's frames (nil: not sent).
	event(f frame) []byte
	// truncated says that dropped events from firstID on are lost.
	truncated(dropped, firstID int64) []byte
	// end is written when the run has ended, after its last event id.
	end(v Run, last int64) []byte
}

// nativeFormat sends the frames as the run recorded them, those kinds
// selects, and the run itself in a last end event.
type nativeFormat struct{ kinds kindFilter }

func (f nativeFormat) filter() kindFilter { return f.kinds }
func (nativeFormat) head() []byte         { return nil }

func (f nativeFormat) event(fr frame) []byte {
	if f.kinds != nil && !f.kinds[fr.name] {
		return nil
	}
	return fr.data
}

func (nativeFormat) truncated(dropped, firstID int64) []byte {
	data, _ := json.Marshal(map[string]int64{"dropped": dropped, "first_id": firstID})
	return sseFrame("", EventTruncated, data)
}

func (nativeFormat) end(v Run, last int64) []byte {
	data, _ := json.Marshal(v)
	return sseFrame(strconv.FormatInt(last+1, 10), EventEnd, data)
}

// extendWrite gives the next write Config.WriteTimeout, in place of the
// HTTP server's WriteTimeout, which counts from the request and would cut
// an event stream or a long wait: a client that does not take the bytes
// in time is dropped. (Go's server lifts the read deadline itself once
// the request's body is read.)
func (s *Server) extendWrite(rc *http.ResponseController) {
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
}

// sseWriter writes a stream's frames, each within the write timeout.
type sseWriter struct {
	s  *Server
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (sw sseWriter) write(b []byte) error {
	sw.s.extendWrite(sw.rc)
	_, err := sw.w.Write(b)
	return err
}

func (sw sseWriter) flush() error {
	sw.s.extendWrite(sw.rc)
	return sw.rc.Flush()
}

// openStream answers with a stream of server-sent events in format and
// writes the format's head; it reports false when the client is gone.
//
// Every stream says in Location where to re-attach to it: a stream that
// breaks (its replica died, a proxy cut it) goes on from there, on any
// replica, after the Last-Event-ID the client saw, as the LangGraph SDK
// does by itself. A joined stream is its own location; a stream that
// creates its run sets the run's before.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, format streamFormat) (sseWriter, bool) {
	out := sseWriter{s: s, w: w, rc: rc}
	h := w.Header()
	if h.Get("Location") == "" && r.Method == http.MethodGet {
		h.Set("Location", r.URL.EscapedPath())
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if head := format.head(); head != nil && out.write(head) != nil {
		return out, false
	}
	return out, out.flush() == nil
}

// serveEvents writes the run's events after id after as server-sent
// events until the run ends (then an end event) or the client leaves. A
// client that leaves, or takes longer than Config.WriteTimeout to take a
// write, does not stop the run. The caller has attached to the run's
// event log. Events the log no longer holds are read from the Recorder
// once the run has ended; otherwise a truncated event says how many were
// dropped.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, ru *run, after int64, format streamFormat) {
	if out, ok := s.openStream(w, r, rc, format); ok {
		s.streamRun(r, out, ru, after, format)
	}
}

// streamRun writes the run's events after id after on the opened stream
// out, as serveEvents does, and reports whether the run ended with the
// client still there.
func (s *Server) streamRun(r *http.Request, out sseWriter, ru *run, after int64, format streamFormat) bool {
	heartbeat := time.NewTicker(s.cfg.Heartbeat)
	defer heartbeat.Stop()
	var buf []frame
	for {
		frames, dropped, closed, wake := ru.events.since(after, buf[:0])
		buf = frames
		if dropped > 0 && closed && s.cfg.Recorder != nil {
			got, err := s.replayRecorded(r, out, ru, after, after+dropped, format)
			if err != nil {
				return false
			}
			dropped -= got - after
			after = got
		}
		if dropped > 0 {
			if out.write(format.truncated(dropped, after+dropped+1)) != nil {
				return false
			}
			after += dropped
		}
		for _, f := range frames {
			after = f.id
			if b := format.event(f); b != nil && out.write(b) != nil {
				return false
			}
		}
		if len(frames) == 0 && closed {
			v, err := s.runView(r.Context(), ru)
			if err != nil {
				s.log.ErrorContext(r.Context(), "server: the end of a stream has no values", "request_id", requestID(r.Context()), "run", ru.id, "err", err)
			}
			if b := format.end(v, after); b == nil || out.write(b) == nil {
				return out.flush() == nil
			}
			return false
		}
		if dropped > 0 || len(frames) > 0 {
			if out.flush() != nil {
				return false
			}
			continue
		}
		select {
		case <-wake:
		case <-heartbeat.C:
			if out.write([]byte(": ping\n\n")) != nil || out.flush() != nil {
				return false
			}
		case <-r.Context().Done():
			return false
		}
	}
}
