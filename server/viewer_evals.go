package server

import (
	"errors"
	"net/http"

	"github.com/coorflow/coorflow/eval"
)

// CodeUnknownEval is the code of GET /v1/evals/{eval} for an eval run the
// caller's owner does not have (404).
const CodeUnknownEval = "unknown_eval"

// EvalRunList is the body of GET /v1/evals: the caller's eval runs,
// newest first, without their trials.
type EvalRunList struct {
	Evals []*eval.Result `json:"evals"`
}

// evalRoutes serves the eval runs kept in Config.Store (coorflow eval
// keeps them there) to the viewer: GET /v1/evals and /v1/evals/{eval},
// each owner's own.
func (s *Server) evalRoutes() {
	s.handle("GET /v1/evals", s.auth(s.handleEvals))
	s.handle("GET /v1/evals/{eval}", s.auth(s.handleEval))
}

func (s *Server) evalStore(r *http.Request) *eval.DocStore {
	if s.cfg.Store == nil {
		return nil
	}
	return eval.NewDocStore(s.cfg.Store, ownerFrom(r.Context()))
}

func (s *Server) handleEvals(w http.ResponseWriter, r *http.Request) {
	list := EvalRunList{Evals: []*eval.Result{}}
	if st := s.evalStore(r); st != nil {
		runs, err := st.ListRuns(r.Context())
		if err != nil {
			writeError(w, s.internal(r, err))
			return
		}
		if len(runs) > maxTraceRuns {
			runs = runs[:maxTraceRuns]
		}
		list.Evals = append(list.Evals, runs...)
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) handleEval(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("eval")
	st := s.evalStore(r)
	if st == nil {
		writeError(w, errorf(http.StatusNotFound, CodeUnknownEval, "no eval run %q", id))
		return
	}
	res, err := eval.LoadResult(r.Context(), st, id)
	switch {
	case errors.Is(err, eval.ErrNotFound):
		writeError(w, errorf(http.StatusNotFound, CodeUnknownEval, "no eval run %q", id))
	case err != nil:
		writeError(w, s.internal(r, err))
	default:
		writeJSON(w, http.StatusOK, res)
	}
}
