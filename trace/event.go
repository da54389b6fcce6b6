package trace

import (
	"encoding/json"
	"time"
)

// The statuses of a recorded run.
const (
	StatusRunning     = "running"     // started; not finished (or its process died)
	StatusDone        = "done"        // finished: nothing left to run
	StatusInterrupted = "interrupted" // paused on interrupts
	StatusError       = "error"       // failed
	StatusCancelled   = "cancelled"   // its context was cancelled
)

// How a recorded run started (RunInfo.Start).
const (
	StartInput    = "input"    // with an input: Replay can run it again
	StartResume   = "resume"   // answering interrupts of an earlier run
	StartContinue = "continue" // continuing an unfinished run of its thread
)

// RunInfo is a run in the index of recorded runs.
type RunInfo struct {
	ID string `json:"run_id"`
	// Thread is the thread as its client knows it; GraphThread the thread
	// id the engine ran under (graph.Thread), which Replay passes again.
	Thread      string `json:"thread_id,omitempty"`
	GraphThread string `json:"graph_thread,omitempty"`
	// Workflow is the name the workflow was started by; Graph the compiled
	// graph's name (the root of every event path).
	Workflow string `json:"workflow,omitempty"`
	Graph    string `json:"graph,omitempty"`
	// Owner is who started the run (a server token's owner).
	Owner  string `json:"owner,omitempty"`
	Status string `json:"status"`
	// Start says how the run started: StartInput, StartResume or
	// StartContinue. Input holds the input's writes (EncodeInput); for a
	// StartResume run recorded by the server, the answers it was given:
	// {"resume": answer} or {"resume_each": {"<interrupt id>": answer}}.
	Start string          `json:"start"`
	Input json.RawMessage `json:"input,omitempty"`
	// Runtime holds the run's string runtime values (graph.WithRuntime).
	Runtime   map[string]string `json:"runtime,omitempty"`
	StartedAt time.Time         `json:"started_at"`
	EndedAt   *time.Time        `json:"ended_at,omitempty"`
	// FinalState holds the channel values when the run ended (done or
	// interrupted), as graph.State encodes them.
	FinalState json.RawMessage `json:"final_state,omitempty"`
	// Error is why the run failed (error, cancelled).
	Error string `json:"error,omitempty"`
	// Events is the sequence number of the run's last event.
	Events int64 `json:"events"`
}

// Event is one recorded event of a run: a graph.Event with its Data as
// JSON. A model call's request and response are kept apart from its
// payload, and read only when asked for (EventQuery.Bodies).
type Event struct {
	RunID string `json:"run_id"`
	// Seq numbers the run's events from 1, in the order the run emitted
	// them, counting those not recorded (RecorderConfig.Skip): it is the
	// event id the server's streams use.
	Seq int64 `json:"seq"`
	// Kind is the event's name (graph.Event.Name): node_end, model_call,
	// tool_result, ...
	Kind    string    `json:"kind"`
	Path    string    `json:"path"`
	Node    string    `json:"node,omitempty"`
	Step    int       `json:"step"`
	Attempt int       `json:"attempt,omitempty"`
	Time    time.Time `json:"time"`
	// Duration of a node (node_end).
	Duration time.Duration `json:"duration,omitempty"`
	// Agent is the agent the payload names, if any.
	Agent string `json:"agent,omitempty"`
	// Payload is the event's Data as JSON: the node names of a step, a
	// task's writes, an llm.ModelCall (without request and response), a
	// tools.CallEvent or ResultEvent, an agent event (agentevent), a
	// window snapshot, the interrupts, a run's status.
	Payload json.RawMessage `json:"payload,omitempty"`
	Error   string          `json:"error,omitempty"`
	// Hash identifies a model call's request (llm.ModelCall.Hash);
	// Request and Response are the call's bodies.
	Hash     string          `json:"hash,omitempty"`
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
}

// RunQuery selects runs of the index. Zero fields select everything.
type RunQuery struct {
	Owner    string
	Thread   string
	Workflow string
	Status   string
	// Before keeps runs started strictly before it.
	Before time.Time
	// BeforeID, with Before, also keeps the runs started at Before whose
	// ID sorts before BeforeID (byte order): the runs that come after the
	// run (Before, BeforeID) in the order of Runs, so that the started
	// time and ID of a page's last run ask for the next page (AllRuns).
	// It is ignored when Before is zero.
	BeforeID string
	// Brief leaves the large fields out of the runs returned: Input,
	// Runtime and FinalState are nil.
	Brief bool
	// Limit caps the runs returned (DefaultRunLimit when 0).
	Limit int
}

// DefaultRunLimit is how many runs a RunQuery returns when it sets no
// Limit.
const DefaultRunLimit = 100

// EventQuery selects events of one run. Zero fields select everything.
type EventQuery struct {
	// After and Until bound the sequence numbers: After < Seq <= Until
	// (Until 0: no upper bound).
	After, Until int64
	// Kinds keeps events of these kinds only.
	Kinds []string
	// Path keeps events whose path is Path or lies below it.
	Path string
	// Limit caps the events returned: MaxEventLimit when 0 or more than
	// that.
	Limit int
	// MaxBytes caps the bytes of the events returned, as Event.Size
	// counts them: the events, in order, while their sizes sum to at
	// most MaxBytes, and the first one whatever its size (so that a
	// reader paging with After goes on). DefaultEventBytes when 0 or
	// less, MaxEventBytes when more.
	MaxBytes int64
	// Bodies includes the requests and responses of model calls.
	Bodies bool
}

// Bounds of one EventQuery's answer, so that no reader of a recording
// holds more than a page of it: a reader that wants a whole run pages
// through it (AllEvents).
const (
	// MaxEventLimit caps the events one query returns.
	MaxEventLimit = 10_000
	// DefaultEventBytes caps the bytes of events one query returns when
	// it sets no MaxBytes.
	DefaultEventBytes = 4 << 20
	// MaxEventBytes caps the bytes of events one query returns whatever
	// its MaxBytes (but for its first event).
	MaxEventBytes = 64 << 20
)
