package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
)

type runMode int

const (
	modeBackground runMode = iota // 202 with the run id once it has started
	modeWait                      // 200 with the result once it has ended
	modeStream                    // its events as server-sent events
)

// cancelWait bounds how long a cancel request waits for the run to end.
const cancelWait = 10 * time.Second

type propagationCarrier = propagation.HeaderCarrier

// RunRequest is the body of POST /v1/threads/{thread}/runs (and /wait,
// /stream). At most one field is set: Input starts a new run; Resume or
// ResumeEach answer the pending interrupts; none continues a run that did
// not finish (after a cancellation or a shutdown).
type RunRequest struct {
	// Input holds JSON values keyed by channel name; {} is an empty input.
	Input json.RawMessage `json:"input,omitempty"`
	// Resume answers the only pending interrupt (any JSON value, null
	// included).
	Resume json.RawMessage `json:"resume,omitempty"`
	// ResumeEach answers pending interrupts by id.
	ResumeEach map[string]json.RawMessage `json:"resume_each,omitempty"`
	// Budget replaces the workflow's run budget for this run: raise it
	// to continue a run a budget stopped. The owner's budget still holds.
	Budget *llm.Budget `json:"budget,omitempty"`
	// Config holds the run's config: values by key that its nodes read
	// (runs.ConfigFrom) and its file's expressions read as config.<key>
	// (a model choice, a user id). At most runs.MaxConfigBytes; the keys
	// thread_id, checkpoint_id, checkpoint_ns, run_id and coorflow.* are
	// reserved (see package runs).
	Config json.RawMessage `json:"config,omitempty"`
	// Checkpoint starts the run from this checkpoint of the thread (an id
	// its history lists) instead of its newest: with no input the steps
	// after it run again (a replay); with an input, the input is a new
	// turn on the state it held, any step still to run there dropped (a
	// fork). Either way the new run's checkpoints follow it, and the older
	// ones stay in the history.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// maxCheckpointID bounds a checkpoint id in a request.
const maxCheckpointID = 256

func (s *Server) handleCreateRun(mode runMode) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		th, wf, ok := s.threadFor(w, r)
		if !ok {
			return
		}
		var req RunRequest
		if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
			writeError(w, e)
			return
		}
		var kinds kindFilter
		if mode == modeStream {
			var e *apiError
			if kinds, e = s.parseKinds(r); e != nil {
				writeError(w, e)
				return
			}
		}
		ru := s.newRun(r, th, wf)
		if e := ru.setRequest(req); e != nil {
			writeError(w, e)
			return
		}
		if mode == modeStream {
			// Attached before the run starts, the stream gets every event
			// however soon the run ends.
			ru.events.attach()
			defer ru.events.detach()
		}
		p, err := s.start(r.Context(), ru, storedRequest{RunRequest: req})
		if err != nil {
			writeError(w, s.internal(r, err))
			return
		}
		if err := s.awaitStart(r.Context(), p, mode == modeWait); err != nil {
			s.writeFailure(w, r, err) // the client left: the run goes on
			return
		}
		switch mode {
		case modeBackground:
			v, err := s.view(r.Context(), p, false)
			if err != nil {
				writeError(w, s.internal(r, err))
				return
			}
			w.Header().Set("Location", "/v1/threads/"+th.ID+"/runs/"+ru.id)
			writeJSON(w, http.StatusAccepted, v)
		case modeWait:
			v, err := s.awaitEnd(r.Context(), p, 0)
			if err != nil {
				s.writeFailure(w, r, err)
				return
			}
			s.extendWrite(http.NewResponseController(w))
			writeJSON(w, http.StatusOK, v)
		case modeStream:
			w.Header().Set("Location", "/v1/threads/"+th.ID+"/runs/"+ru.id+"/stream")
			s.serve(w, r, p, 0, nativeFormat{kinds})
		}
	}
}

// setRequest checks the request's fields and sets the run's input or
// answers.
func (ru *run) setRequest(req RunRequest) *apiError {
	if b := req.Budget; b != nil {
		if b.Tokens < 0 || b.USD < 0 {
			return fieldErrorf(CodeInvalidField, "budget", "field \"budget\" cannot be negative: {\"tokens\": N, \"usd\": X, \"ask\": false}")
		}
		ru.budget = b
	}
	if e := ru.setConfig(req.Config, "config"); e != nil {
		return e
	}
	if req.Checkpoint != "" {
		if len(req.Checkpoint) > maxCheckpointID {
			return fieldErrorf(CodeInvalidField, "checkpoint", "field \"checkpoint\" is %d bytes, more than a checkpoint id has (%d)", len(req.Checkpoint), maxCheckpointID)
		}
		ru.from = req.Checkpoint
	}
	given := 0
	for _, set := range []bool{len(req.Input) > 0, len(req.Resume) > 0, req.ResumeEach != nil} {
		if set {
			given++
		}
	}
	if given > 1 {
		return fieldErrorf(CodeInvalidField, "", "send at most one of \"input\" (a new run), \"resume\" or \"resume_each\" (answers to interrupts)")
	}
	switch {
	case len(req.Input) > 0:
		input, e := decodeInput(ru.wf, req.Input)
		if e != nil {
			return e
		}
		// A fork: the input is a new turn at the chosen checkpoint, whatever
		// step was still to run there.
		ru.input, ru.discard = input, ru.from != ""
	case len(req.Resume) > 0:
		ru.resume, ru.resumeOne, ru.oneAnswer = graph.Resume(req.Resume), true, req.Resume
		ru.answers = recordedAnswers(req.Resume, nil)
	case req.ResumeEach != nil:
		if len(req.ResumeEach) == 0 {
			return fieldErrorf(CodeInvalidField, "resume_each", "field \"resume_each\" must answer at least one interrupt: {\"<interrupt id>\": <answer>}")
		}
		answers := make(map[string]any, len(req.ResumeEach))
		for id, v := range req.ResumeEach {
			if v == nil {
				v = json.RawMessage("null")
			}
			answers[id] = v
		}
		ru.resume = graph.ResumeEach(answers)
		ru.answers = recordedAnswers(nil, req.ResumeEach)
	}
	return nil
}

// decodeInput turns {"channel": value, ...} into writes, naming the
// channel at fault.
func decodeInput(wf *graph.Runnable, raw json.RawMessage) ([]graph.Write, *apiError) {
	if string(raw) == "null" {
		return nil, nil
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal(raw, &values); err != nil {
		return nil, fieldErrorf(CodeInvalidField, "input", "field \"input\" must be a JSON object keyed by channel name")
	}
	writes := graph.Input()
	for _, name := range sortedKeys(values) {
		ws, err := wf.DecodeInput(map[string]json.RawMessage{name: values[name]})
		switch {
		case errors.Is(err, graph.ErrUnknownChannel):
			return nil, fieldErrorf(CodeUnknownChannel, "input."+name, "%v", err)
		case err != nil:
			return nil, fieldErrorf(CodeInvalidField, "input."+name, "%v", err)
		}
		writes = append(writes, ws...)
	}
	return writes, nil
}

func (s *Server) handleGetRun(w http.ResponseWriter, r *http.Request) {
	p, ok := s.placedFor(w, r)
	if !ok {
		return
	}
	v, err := s.view(r.Context(), p, true)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// RunList is the body of GET /v1/threads/{thread}/runs: the runs without
// their values and interrupts (GET the run for them).
type RunList struct {
	Runs []Run `json:"runs"`
}

func (s *Server) handleListRuns(w http.ResponseWriter, r *http.Request) {
	th, _, ok := s.threadFor(w, r)
	if !ok {
		return
	}
	runs, _, err := s.runsOn(r.Context(), threadKey(ownerFrom(r.Context()), th.ID))
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	slices.Reverse(runs)
	writeJSON(w, http.StatusOK, RunList{Runs: runs})
}

func (s *Server) handleCancelRun(w http.ResponseWriter, r *http.Request) {
	p, ok := s.placedFor(w, r)
	if !ok {
		return
	}
	live, err := s.cancel(r.Context(), p)
	if err == nil && !live {
		var v Run
		if v, err = s.view(r.Context(), p, false); err == nil {
			e := errorf(http.StatusConflict, CodeRunFinished, "run %q has already ended (%s)", p.id, v.Status)
			e.Run = p.id
			writeError(w, e)
			return
		}
	}
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	v, err := s.awaitEnd(r.Context(), p, cancelWait)
	if err != nil {
		s.writeFailure(w, r, err)
		return
	}
	status := http.StatusOK
	if !ended(v.Status) {
		status = http.StatusAccepted
	}
	s.extendWrite(http.NewResponseController(w))
	writeJSON(w, status, v)
}
