package server

import (
	"embed"
	"errors"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/coorflow/coorflow/trace"
)

// viewerFiles are the run viewer's page, script and styles: plain files,
// nothing loaded from elsewhere.
//
//go:embed viewer
var viewerFiles embed.FS

// Codes of the viewer's JSON errors, beside the API's.
const (
	CodeUnknownAgent = "unknown_agent" // 404
)

// Limits of GET /v1/trace/runs and /v1/trace/runs/{run}/events.
const (
	maxTraceRuns       = 500
	defaultTraceEvents = 1000
	maxTraceEvents     = trace.MaxEventLimit
	// A page of events holds about this many bytes (Event.Size), or one
	// larger event; max_bytes may ask for up to trace.DefaultEventBytes.
	defaultTraceEventBytes = 1 << 20
	minTraceEventBytes     = 1 << 10
)

// viewerCSP lets the page load its own script and styles and call the API
// of its own origin, and nothing else.
const viewerCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// viewerRoutes serves the run viewer and the JSON it reads. Called when
// Config.Recorder is set.
func (s *Server) viewerRoutes() {
	assets, err := fs.Sub(viewerFiles, "viewer")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	files := http.StripPrefix("/viewer", http.FileServerFS(assets))
	s.handle("GET /viewer/", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", viewerCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		// The token may be in the page's address on the first load.
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
	s.handle("GET /v1/trace/runs", s.auth(s.handleTraceRuns))
	s.handle("GET /v1/trace/runs/{run}", s.auth(s.handleTraceRun))
	s.handle("GET /v1/trace/runs/{run}/timeline", s.auth(s.handleTraceTimeline))
	s.handle("GET /v1/trace/runs/{run}/agents/{agent}", s.auth(s.handleTraceAgent))
	s.handle("GET /v1/trace/runs/{run}/events", s.auth(s.handleTraceEvents))
	s.evalRoutes()
}

// TraceRunList is the body of GET /v1/trace/runs.
type TraceRunList struct {
	Runs []TraceRun `json:"runs"`
}

// TraceRun is a recorded run in a list: its index entry without the final
// state, and its input in one line (trace.DescribeInput).
type TraceRun struct {
	trace.RunInfo
	InputText string `json:"input_text,omitempty"`
}

// TraceEventList is the body of GET /v1/trace/runs/{run}/events: a page
// of a run's events.
type TraceEventList struct {
	Events []trace.Event `json:"events"`
	// NextAfter, when set, is the after= of the next page: the run has
	// more events the query selects. Unset on the last page.
	NextAfter int64 `json:"next_after,omitempty"`
}

func (s *Server) handleTraceRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rq := trace.RunQuery{Owner: ownerFrom(r.Context()), Thread: q.Get("thread"), Workflow: q.Get("workflow"), Status: q.Get("status")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTraceRuns {
			writeError(w, fieldErrorf(CodeInvalidQuery, "limit", "limit must be an integer from 1 to %d, not %q", maxTraceRuns, v))
			return
		}
		rq.Limit = n
	}
	if v := q.Get("before"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			writeError(w, fieldErrorf(CodeInvalidQuery, "before", "before must be a time in RFC 3339 form (2006-01-02T15:04:05Z), not %q", v))
			return
		}
		rq.Before = t
	}
	runs, err := s.cfg.Recorder.Store().Runs(r.Context(), rq)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	list := TraceRunList{Runs: make([]TraceRun, len(runs))}
	for i, ru := range runs {
		ru.FinalState = nil // in the run itself; lists stay small
		text := trace.DescribeInput(ru.Input)
		if ru.Start == trace.StartResume {
			text = describeAnswers(ru.Input)
		}
		list.Runs[i] = TraceRun{RunInfo: ru, InputText: text}
	}
	writeJSON(w, http.StatusOK, list)
}

// traceRunFor returns the recorded run the request names, if it is the
// owner's; or writes a 404 and returns false.
func (s *Server) traceRunFor(w http.ResponseWriter, r *http.Request) (trace.RunInfo, bool) {
	id := r.PathValue("run")
	run, err := s.cfg.Recorder.Store().Run(r.Context(), id)
	switch {
	case errors.Is(err, trace.ErrNotFound) || (err == nil && run.Owner != ownerFrom(r.Context())):
		writeError(w, errorf(http.StatusNotFound, CodeUnknownRun, "no recorded run %q", id))
		return run, false
	case err != nil:
		writeError(w, s.internal(r, err))
		return run, false
	}
	return run, true
}

func (s *Server) handleTraceRun(w http.ResponseWriter, r *http.Request) {
	if run, ok := s.traceRunFor(w, r); ok {
		writeJSON(w, http.StatusOK, run)
	}
}

func (s *Server) handleTraceTimeline(w http.ResponseWriter, r *http.Request) {
	run, ok := s.traceRunFor(w, r)
	if !ok {
		return
	}
	tl, err := trace.LoadTimeline(r.Context(), s.cfg.Recorder.Store(), run.ID)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	writeJSON(w, http.StatusOK, tl)
}

func (s *Server) handleTraceAgent(w http.ResponseWriter, r *http.Request) {
	run, ok := s.traceRunFor(w, r)
	if !ok {
		return
	}
	v := r.PathValue("agent")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		writeError(w, errorf(http.StatusNotFound, CodeUnknownAgent, "no agent %q in run %q: agent ids are the numbers the timeline gives", v, run.ID))
		return
	}
	d, err := trace.LoadAgent(r.Context(), s.cfg.Recorder.Store(), run.ID, id)
	switch {
	case errors.Is(err, trace.ErrAgentNotFound):
		writeError(w, errorf(http.StatusNotFound, CodeUnknownAgent, "no agent %d in run %q", id, run.ID))
	case err != nil:
		writeError(w, s.internal(r, err))
	default:
		writeJSON(w, http.StatusOK, d)
	}
}

func (s *Server) handleTraceEvents(w http.ResponseWriter, r *http.Request) {
	run, ok := s.traceRunFor(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	eq := trace.EventQuery{Path: q.Get("path"), Limit: defaultTraceEvents, MaxBytes: defaultTraceEventBytes, Bodies: q.Get("bodies") == "true"}
	for name, dst := range map[string]*int64{"after": &eq.After, "until": &eq.Until} {
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				writeError(w, fieldErrorf(CodeInvalidQuery, name, "%s must be an event sequence number (an integer >= 0), not %q", name, v))
				return
			}
			*dst = n
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTraceEvents {
			writeError(w, fieldErrorf(CodeInvalidQuery, "limit", "limit must be an integer from 1 to %d, not %q", maxTraceEvents, v))
			return
		}
		eq.Limit = n
	}
	if v := q.Get("max_bytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < minTraceEventBytes || n > trace.DefaultEventBytes {
			writeError(w, fieldErrorf(CodeInvalidQuery, "max_bytes", "max_bytes must be an integer from %d to %d, not %q", minTraceEventBytes, trace.DefaultEventBytes, v))
			return
		}
		eq.MaxBytes = n
	}
	kinds, e := s.parseKinds(r)
	if e != nil {
		writeError(w, e)
		return
	}
	for k := range kinds {
		eq.Kinds = append(eq.Kinds, k)
	}
	slices.Sort(eq.Kinds)
	if v := q.Get("bodies"); v != "" && v != "true" && v != "false" {
		writeError(w, fieldErrorf(CodeInvalidQuery, "bodies", "bodies must be true or false, not %q", v))
		return
	}
	store := s.cfg.Recorder.Store()
	evs, err := store.Events(r.Context(), run.ID, eq)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	list := TraceEventList{Events: evs}
	if len(evs) == 0 {
		list.Events = []trace.Event{}
	} else if last := evs[len(evs)-1].Seq; eq.Until == 0 || last < eq.Until {
		// Whether a next page holds anything: one event, without bodies.
		more := eq
		more.After, more.Limit, more.Bodies = last, 1, false
		next, err := store.Events(r.Context(), run.ID, more)
		if err != nil {
			writeError(w, s.internal(r, err))
			return
		}
		if len(next) > 0 {
			list.NextAfter = last
		}
	}
	writeJSON(w, http.StatusOK, list)
}
