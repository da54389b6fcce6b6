package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/telemetry"
	runtrace "github.com/coorflow/coorflow/trace"
)

// Defaults of the Config fields left zero.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultEventBuffer    = 1024
	DefaultEventBytes     = 1 << 20
	DefaultRetainRuns     = 1000
	DefaultRetainBytes    = 8 << 20
	DefaultHeartbeat      = 15 * time.Second
	DefaultWriteTimeout   = 30 * time.Second
	DefaultMaxActiveRuns  = 16
	DefaultMaxQueuedRuns  = 64
	DefaultMaxStoredBytes = 1 << 30
	DefaultMaxMCPSessions = 16
)

// Keys of the runtime values (graph.RuntimeString) every run started by the
// server carries: who asked, on which thread, in which run.
const (
	RuntimeOwner  = store.RuntimeOwner
	RuntimeThread = graph.RuntimeThread
	RuntimeRun    = graph.RuntimeRun
)

// Config configures a Server.
type Config struct {
	// Workflows are the workflows clients can run, by the name they use
	// in requests.
	Workflows map[string]*graph.Runnable
	// Saver stores threads and their checkpoints. Required.
	Saver graph.Saver
	// Tokens maps each bearer token to the owner it acts for. Required.
	Tokens map[string]string
	// QueueBusy queues a run started on a thread that already has one; the
	// queued run starts when the thread is free. Without it, such a request
	// is refused with 409 thread_busy.
	QueueBusy bool
	// MaxBodyBytes caps request bodies (default 1 MiB); larger ones get 413.
	MaxBodyBytes int64
	// EventBuffer is how many of a run's most recent events the server
	// keeps for streams that attach late or re-attach (default 1024).
	EventBuffer int
	// EventBufferBytes caps the size of those events (default 1 MiB); the
	// newest event is kept whatever its size.
	EventBufferBytes int
	// RetainRuns is how many finished runs the server remembers, the
	// oldest forgotten first (default 1000). A forgotten run's thread and
	// checkpoints stay in the Saver. A finished run keeps neither its
	// values nor its events in memory: they are read back from the Saver
	// and the Recorder when asked for (the values of the runs that ended
	// done most recently are cached: 1 MiB of them at most, each
	// under 64 KiB). With Replicas, the replicas keep
	// the newest RetainRuns ended runs, with their events, in the
	// database, and delete the others every half LeaseTTL.
	RetainRuns int
	// RetainBytes caps the memory the remembered finished runs take
	// (default 8 MiB), the oldest forgotten first.
	RetainBytes int64
	// Heartbeat is the interval of the comment lines that keep an idle
	// event stream open through proxies (default 15s).
	Heartbeat time.Duration
	// WriteTimeout bounds each write of a response that may outlive the
	// HTTP server's own WriteTimeout — event streams and the answers of
	// runs/wait (default 30s). A client that does not take the bytes in
	// time is dropped; its run goes on.
	WriteTimeout time.Duration
	// MaxActiveRuns, MaxQueuedRuns and MaxStoredBytes are the quotas of
	// each owner: runs in progress (default 16; with Replicas, a run
	// waiting for a replica with room is in progress), runs queued
	// behind others of their thread (default 64), and the bytes the
	// server stores for the owner (default 1 GiB). A request beyond one
	// is refused with 429 quota_exceeded. A negative value means no
	// limit.
	//
	// The stored bytes are those of the owner's threads' checkpoints in
	// the Saver, of its recorded runs (Recorder) and of its Platform store
	// items (Store). At its first request after the server starts, an
	// owner's checkpoints (when the Saver is a graph.ThreadSizer), recorded
	// runs (when the Recorder's store is a trace.Sizer) and store items
	// are read from the databases — coorflow's Savers and stores are
	// Sizers; with another, what this server writes is counted from its
	// start — then the server counts what it writes. A store item is taken from the quota before it is written,
	// in one step, so parallel writes cannot pass it together. A run's
	// recording stops growing when it would pass the quota: its events
	// from there on are not recorded, the recording ends with an event of
	// kind trace.KindTruncated, and the run goes on. Deleting a thread
	// deletes its recorded runs, which frees their bytes; what they spent
	// stays spent (OwnerBudget's account keeps it). An owner at the
	// quota has its bytes read again every 10 seconds at most, so that
	// runs pruned meanwhile count no more, and those written by other
	// replicas do.
	MaxActiveRuns  int
	MaxQueuedRuns  int
	MaxStoredBytes int64
	// MaxMCPSessions is the quota of MCP sessions each owner keeps open
	// on /mcp at once (default 16; negative: no limit). A session ends
	// when its client closes it (DELETE /mcp) or after 30 minutes idle;
	// one more is refused with 429 quota_exceeded (quota mcp_sessions).
	MaxMCPSessions int
	// Budgets are the run budgets of the workflows, by name (a workflow
	// file's settings.budget); a request's "budget" replaces its run's.
	// A run that continues or resumes a thread counts what the thread's
	// turn spent as the Recorder has it (nothing without one).
	Budgets map[string]llm.Budget
	// OwnerBudget is what each owner's runs may spend together;
	// OwnerBudgets gives some owners their own. Each owner's spend and
	// the reservations of its calls in flight are kept in the database of
	// the Saver (else of the Recorder's store), shared by every replica,
	// process and Temporal worker on it (in memory for backends in
	// memory), starting from what the owner's recorded runs spent when
	// first used. A run goes no further than the model call that would
	// exceed it, and an owner whose budget is spent cannot start runs (402
	// budget_exceeded). Owner budgets need the Recorder; they never ask.
	OwnerBudget  llm.Budget
	OwnerBudgets map[string]llm.Budget
	// Agents lists the dynamic agents of an owner; nil lists none.
	Agents Agents
	// RunOptions are given to every run, after the server's own (for
	// example graph.StepLimit or graph.MaxConcurrency).
	RunOptions []graph.Option
	// Envs describe, by workflow name, the environment each workflow
	// was compiled with (code execution, its file): each of its runs
	// carries it (runs.RuntimeEnv) and its recording keeps it, so that a
	// replay compiles the same. None: not said.
	Envs map[string]runs.Env
	// Executors run the runs of the workflows they name elsewhere than in
	// this process (on Temporal's workers: temporalrun.Runner), with the
	// same options and events; the other workflows, and replays and forks
	// (a run from a checkpoint), run in process. An executor whose model
	// calls are made elsewhere is wrapped with runs.Remote, so that its
	// runs' usage counts them (the workers' calls never pass this
	// process's meters).
	Executors map[string]Executor
	// EventNames names the custom events (graph.Event.Name) that the
	// workflows publish besides those of coorflow's packages, so that
	// clients can select them with ?kinds=. Every event is streamed
	// whether or not it is named here.
	EventNames []string
	// Logger receives the server's logs (default slog.Default()).
	Logger *slog.Logger
	// TracerProvider makes the spans of runs (default: the global
	// provider).
	TracerProvider trace.TracerProvider
	// Propagator reads the caller's trace context from request headers
	// (default: W3C traceparent and baggage).
	Propagator propagation.TextMapPropagator
	// MCPTools describes the workflows as the MCP tools of /mcp and
	// ServeMCP, by workflow name; a workflow without an entry takes its
	// input from channel "input" and returns channel "answer".
	MCPTools map[string]MCPTool
	// ConfigSchemas is, by workflow name, the JSON Schema of the config
	// a run of the workflow reads (a workflow file's config section:
	// workflows.File.ConfigSchema); the Platform API shows it as the
	// assistant's config_schema and context_schema. A workflow without
	// an entry shows null.
	ConfigSchemas map[string]map[string]any
	// Recorder, when set, records every run — its events, the context
	// snapshots of its model calls, the calls' requests and responses —
	// and the server serves the run viewer at /viewer/ and its JSON under
	// /v1/trace/. The server does not close it.
	Recorder *runtrace.Recorder
	// Store, when set, is served as the LangGraph Platform API's store
	// (/store/...), each owner's items apart; without it those routes
	// answer 501. It keeps the Platform's crons too (see MaxCrons), and
	// the index of the OpenAI endpoint's conversations (docs/openai.md:
	// two small items per thread, deleted with it), as items of the
	// owner "#coorflow-server".
	Store store.Store
	// WebhookAllow lists the URL prefixes a Platform run's webhook may
	// call (for example "https://hooks.example.com/"); without any, runs
	// with a webhook are refused. Redirects are not followed. A webhook
	// is allowed when an entry has its scheme, host and port (the
	// scheme's default when none is given) and the entry's path is a
	// prefix of its path segment by segment ("/hooks" allows "/hooks"
	// and "/hooks/a", not "/hooksa"); webhooks whose paths have "." or
	// ".." segments, encoded slashes or backslashes are refused. An
	// entry must be an http or https URL without credentials, query or
	// fragment, or New fails.
	WebhookAllow []string
	// CORSOrigins are the origins (scheme://host[:port], as a browser
	// sends them in Origin) whose pages may call the API from another
	// origin, such as a chat UI built on the LangGraph SDK: their
	// requests get CORS headers and their preflights are answered. Every
	// request still needs its token. None (the default): no page of
	// another origin may read an answer. /mcp never takes other origins.
	// An entry that is not an http or https origin, or "*", fails New.
	CORSOrigins []string
	// WebhookTimeout bounds each webhook call (default 10s).
	WebhookTimeout time.Duration
	// MaxCrons caps the Platform crons of each owner (default 10; negative:
	// no limit). Crons live in Config.Store, so that they outlive the
	// server and replicas sharing the store fire each once; without a
	// Store they live in the server's memory, and with Config.Replicas
	// they are not served.
	MaxCrons int
	// MinCronInterval is the shortest time between two runs of a cron
	// (default 1 minute; negative: no minimum). A cron whose schedule
	// fires more often ("@every 1s") is refused with 400 invalid_field,
	// and a stored one fires no sooner than this after its last run. A
	// cron's runs count in its owner's quotas and budget as requested
	// runs do.
	MinCronInterval time.Duration
	// MaxAssistants caps the assistants each owner creates (POST
	// /assistants; default 100, negative: no limit). They live in
	// Config.Store, or the server's memory without one; with
	// Config.Replicas they need a Store.
	MaxAssistants int
	// Replicas, when set, shares runs with the other replicas of the
	// server on one database: any replica answers for any run, and a run
	// whose replica dies is taken over by another (see Replicas).
	Replicas Replicas
	// LeaseTTL is how long a replica's lease on the thread of a run it
	// executes lasts unless renewed (default 10s); it renews it every
	// third of that. A replica that dies holds its runs this long.
	LeaseTTL time.Duration
	// ReplicaRuns caps the runs one replica executes at once (default
	// 64); the others wait for a replica with room.
	ReplicaRuns int
}

// Server is the HTTP API over a set of workflows: an http.Handler. Create
// it with New and stop it with Shutdown.
type Server struct {
	cfg       Config
	mux       *http.ServeMux
	routes    []string      // the patterns served, in the order registered
	saver     *meteredSaver // Config.Saver, counting the bytes of each owner
	storage   *storageMeter // the stored bytes of each owner (storage.go)
	tokens    map[[sha256.Size]byte]string
	tracer    trace.Tracer
	log       *slog.Logger
	workflows map[string]WorkflowInfo
	// eventNames are the names ?kinds= accepts.
	eventNames map[string]bool

	mu      sync.Mutex
	closing bool
	// manager keeps the lifecycle of the runs this server executes: those
	// it admits in its ledger, and the runs of replicas it claimed.
	manager    *runs.Manager
	values     *valuesCache       // of runs that ended done (valuescache.go)
	owners     *runs.OwnerBudgets // owner budgets (budget.go); nil without a Recorder
	mcp        mcpState           // /mcp (mcp.go)
	openai     openaiState        // /openai/v1 (openai.go)
	crons      cronState          // Platform crons (platform_crons.go)
	assistants assistantState     // created assistants (platform_assistants.go)
	webhooks   webhookPolicy      // Config.WebhookAllow (webhookpolicy.go)
	cors       corsPolicy         // Config.CORSOrigins (cors.go)
	replica    replicaState       // with Config.Replicas (sharedruns.go)
}

// replicaState is the claim loop of a replica and the runs it executes.
type replicaState struct {
	ctx    context.Context // of the claimed runs; cancelled by Shutdown
	stop   context.CancelFunc
	loops  sync.WaitGroup // the claim loop and the notice loop
	active int            // claimed runs executing; guarded by Server.mu
	// claimMu is held by the claim loop from a claim to the start of its
	// run (claim).
	claimMu sync.Mutex
	// workflows are the names of Config.Workflows: the runs it claims.
	workflows []string
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Saver == nil {
		return nil, errors.New("server: Config.Saver is nil: threads need a saver (checkpoint/sqlite, checkpoint/postgres or checkpoint/memory)")
	}
	if len(cfg.Tokens) == 0 {
		return nil, errors.New("server: Config.Tokens is empty: every request needs a bearer token bound to an owner")
	}
	s := &Server{
		cfg:       cfg,
		mux:       http.NewServeMux(),
		tokens:    make(map[[sha256.Size]byte]string, len(cfg.Tokens)),
		log:       cfg.Logger,
		workflows: make(map[string]WorkflowInfo, len(cfg.Workflows)),
	}
	s.eventNames = eventNames(cfg.EventNames)
	s.values = newValuesCache(valuesCacheBytes)
	s.cfg.MaxStoredBytes = orDefault(s.cfg.MaxStoredBytes, DefaultMaxStoredBytes)
	var recorded runtrace.Store
	if cfg.Recorder != nil {
		recorded = cfg.Recorder.Store()
	}
	s.storage = newStorageMeter(s.cfg.MaxStoredBytes, cfg.Saver, recorded, cfg.Store)
	s.saver = newMeteredSaver(cfg.Saver, s.values, s.storage)
	for tok, owner := range cfg.Tokens {
		if tok == "" || owner == "" {
			return nil, fmt.Errorf("server: Config.Tokens: a token and its owner must both be non-empty (owner %q)", owner)
		}
		if strings.HasPrefix(owner, "#") {
			return nil, fmt.Errorf("server: Config.Tokens: owner %q: owners starting with '#' are the server's own", owner)
		}
		s.tokens[sha256.Sum256([]byte(tok))] = owner
	}
	for name, r := range cfg.Workflows {
		if name == "" || strings.Contains(name, "/") || r == nil {
			return nil, fmt.Errorf("server: Config.Workflows: %q must be a non-empty name without '/' mapped to a compiled graph", name)
		}
		s.workflows[name] = newWorkflowView(name, r)
	}
	for name, x := range cfg.Executors {
		if cfg.Workflows[name] == nil || x == nil {
			return nil, fmt.Errorf("server: Config.Executors: %q must name a workflow of Config.Workflows, mapped to an executor", name)
		}
	}
	if err := checkBudgets(cfg); err != nil {
		return nil, err
	}
	var err error
	if s.webhooks, err = parseWebhookAllow(cfg.WebhookAllow); err != nil {
		return nil, err
	}
	if s.cors, err = parseCORSOrigins(cfg.CORSOrigins); err != nil {
		return nil, err
	}
	s.owners = ownerBudgets(cfg)
	if s.cfg.MaxBodyBytes <= 0 {
		s.cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.cfg.EventBuffer <= 0 {
		s.cfg.EventBuffer = DefaultEventBuffer
	}
	if s.cfg.EventBufferBytes <= 0 {
		s.cfg.EventBufferBytes = DefaultEventBytes
	}
	if s.cfg.RetainRuns <= 0 {
		s.cfg.RetainRuns = DefaultRetainRuns
	}
	if s.cfg.RetainBytes <= 0 {
		s.cfg.RetainBytes = DefaultRetainBytes
	}
	s.manager = runs.NewManager(runs.ManagerConfig{
		RetainRuns: s.cfg.RetainRuns, RetainBytes: s.cfg.RetainBytes,
		EventBuffer: s.cfg.EventBuffer, EventBufferBytes: s.cfg.EventBufferBytes,
		Encode: func(id int64, run string, ev graph.Event) []byte { return encodeFrame(id, run, ev.Name(), ev) },
	})
	if s.cfg.Heartbeat <= 0 {
		s.cfg.Heartbeat = DefaultHeartbeat
	}
	if s.cfg.WriteTimeout <= 0 {
		s.cfg.WriteTimeout = DefaultWriteTimeout
	}
	s.cfg.MaxActiveRuns = orDefault(s.cfg.MaxActiveRuns, DefaultMaxActiveRuns)
	s.cfg.MaxQueuedRuns = orDefault(s.cfg.MaxQueuedRuns, DefaultMaxQueuedRuns)
	s.cfg.MaxMCPSessions = orDefault(s.cfg.MaxMCPSessions, DefaultMaxMCPSessions)
	s.cfg.MaxCrons = orDefault(s.cfg.MaxCrons, DefaultMaxCrons)
	s.cfg.MinCronInterval = orDefault(s.cfg.MinCronInterval, DefaultMinCronInterval)
	if s.log == nil {
		s.log = slog.Default()
	}
	tp := cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	s.tracer = tp.Tracer(telemetry.TracerName)
	if s.cfg.Propagator == nil {
		s.cfg.Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	s.addRoutes()
	if cfg.Replicas != nil {
		if err := s.checkReplicaConfig(); err != nil {
			return nil, err
		}
		s.startReplica()
	}
	s.startCrons()
	s.startAssistants()
	return s, nil
}

// orDefault is v, or def when v is zero.
func orDefault[T ~int | ~int64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func (s *Server) addRoutes() {
	s.handle("GET /healthz", s.handleHealth)
	s.handle("GET /v1/workflows", s.auth(s.handleListWorkflows))
	s.handle("GET /v1/workflows/{workflow}", s.auth(s.handleGetWorkflow))
	s.handle("GET /v1/agents", s.auth(s.handleListAgents))
	s.handle("GET /v1/usage", s.auth(s.handleUsage))
	s.handle("POST /v1/threads", s.auth(s.handleCreateThread))
	s.handle("GET /v1/threads/{thread}", s.auth(s.handleGetThread))
	s.handle("DELETE /v1/threads/{thread}", s.auth(s.handleDeleteThread))
	s.handle("GET /v1/threads/{thread}/state", s.auth(s.handleState))
	s.handle("GET /v1/threads/{thread}/history", s.auth(s.handleHistory))
	s.handle("POST /v1/threads/{thread}/runs", s.auth(s.handleCreateRun(modeBackground)))
	s.handle("POST /v1/threads/{thread}/runs/wait", s.auth(s.handleCreateRun(modeWait)))
	s.handle("POST /v1/threads/{thread}/runs/stream", s.auth(s.handleCreateRun(modeStream)))
	s.handle("GET /v1/threads/{thread}/runs", s.auth(s.handleListRuns))
	s.handle("GET /v1/threads/{thread}/runs/{run}", s.auth(s.handleGetRun))
	s.handle("GET /v1/threads/{thread}/runs/{run}/stream", s.auth(s.handleJoinStream))
	s.handle("POST /v1/threads/{thread}/runs/{run}/cancel", s.auth(s.handleCancelRun))
	s.platformRoutes()
	s.mcpRoutes()
	s.a2aRoutes()
	if s.cfg.Recorder != nil {
		s.viewerRoutes()
	}
	s.openaiRoutes()
}

// handle serves pattern with h. Every route is registered through it, so
// that s.routes lists them all.
func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, h)
	s.routes = append(s.routes, pattern)
}

// ServeHTTP serves the API. Every answer carries an X-Request-Id header,
// the id the server's log names the request by. Requests that match no
// route get a JSON 404 or 405 like every other error.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := newID()
	w.Header().Set("X-Request-Id", id)
	r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
	if s.cors.apply(w, r) {
		return
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	rec := &headerRecorder{header: make(http.Header), code: http.StatusOK}
	h.ServeHTTP(rec, r)
	switch rec.code {
	case http.StatusMethodNotAllowed:
		allow := rec.header.Get("Allow")
		w.Header().Set("Allow", allow)
		writeError(w, errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
	case http.StatusNotFound:
		writeError(w, errorf(http.StatusNotFound, CodeNotFound, "no route for %s %s", r.Method, r.URL.Path))
	default: // a redirect to the clean path
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.code)
	}
}

// headerRecorder captures the status and headers of the mux's own 404, 405
// and redirect handlers.
type headerRecorder struct {
	header http.Header
	code   int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(code int)        { h.code = code }

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		writeError(w, errorf(http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// errShutdown is the cause of the cancellation of runs stopped by Shutdown.
var errShutdown = errors.New("server: shutting down")

// Shutdown stops the server: new runs are refused with 503, queued runs
// are dropped, running runs are cancelled — each keeps its last
// checkpoint, so a later run on the thread continues from there — and
// Shutdown waits until they have ended or ctx is done. Event streams end
// when their run does. It does not close the Saver.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	// The queued runs end first, so that none starts when a run ends.
	err := s.manager.Close(ctx, errShutdown)
	s.stopReplica()
	s.stopMCP()
	s.stopCrons()
	if err != nil {
		return fmt.Errorf("server: shutdown: runs still ending: %w", err)
	}
	return nil
}
