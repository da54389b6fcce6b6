package graph

import "slices"

// Option configures a compiled graph (passed to Compile, as defaults) or one
// run (passed to Invoke, Stream and the thread methods, overriding them).
type Option func(*config)

type config struct {
	saver             Saver
	stepLimit         int
	stepLimitHint     string
	maxConcurrency    int
	thread            string
	checkpointID      string
	discardUnfinished bool
	interruptBefore   map[string]bool
	interruptAfter    map[string]bool
	events            eventFilter
	// sink receives the events of Step and RunTasks (StreamTo).
	sink         func(Event) bool
	durability   Durability
	resume       *resumeSpec
	historyLimit int
	runtime      map[string]any
	// ns is the checkpoint namespace of a subgraph's run ("" for a root run).
	ns string
	// subgraph is the namespace InSubgraph names, for reading a thread.
	subgraph string
	// taskExec runs the tasks nodes start (WithTaskExecutor).
	taskExec TaskExecutor
	// stateCache keeps the checkpoints Step stores; after is the one the
	// step continues (WithStateCache).
	stateCache *StateCache
	after      string
}

const defaultStepLimit = 100

func (c *config) apply(opts []Option) {
	for _, o := range opts {
		o(c)
	}
}

// WithSaver makes runs durable: a checkpoint is stored after the input and
// after every step, so a thread can be read, resumed, replayed and forked.
func WithSaver(s Saver) Option { return func(c *config) { c.saver = s } }

// StepLimit caps the steps of one run (default 100). A run that would take
// more fails with ErrStepLimit.
func StepLimit(n int) Option { return func(c *config) { c.stepLimit = n } }

// StepLimitSetting names, in the error of a run stopped by its step limit,
// where its user raises the limit when the loop is intended: a setting of
// the program's own configuration, such as a workflow file's
// "settings.step_limit", instead of this package's StepLimit option.
func StepLimitSetting(name string) Option { return func(c *config) { c.stepLimitHint = name } }

// MaxConcurrency caps the tasks of a step that run at the same time
// (default: no cap).
func MaxConcurrency(n int) Option { return func(c *config) { c.maxConcurrency = n } }

// Thread names the thread a run belongs to. With a saver, the run continues
// the thread's state.
func Thread(id string) Option { return func(c *config) { c.thread = id } }

// FromCheckpoint runs from a past checkpoint of the thread instead of its
// newest one: the steps after it run again, subgraphs included, and their
// checkpoints start a new branch of the thread's history. The branch starts
// with a copy of the checkpoint (source replay), which becomes the thread's
// head: when the replay pauses on an interrupt, Resume answers it; nothing
// recorded by an earlier run of those steps (results, journal entries,
// answers) is reused. With State, History and UpdateState it names the
// checkpoint to read or write after.
func FromCheckpoint(id string) Option { return func(c *config) { c.checkpointID = id } }

// DiscardUnfinished lets an input start a new run on a thread whose last
// run did not finish (it was cancelled, or waits on interrupts): the
// unfinished step — its pending tasks and questions — is dropped, and the
// input is applied to the thread's newest state as to a finished one.
// Without it such an input is refused. (LangGraph's multitask "interrupt"
// and a new input on an interrupted thread behave this way.)
func DiscardUnfinished() Option { return func(c *config) { c.discardUnfinished = true } }

// InterruptBefore pauses a run before a step that would run any of nodes.
func InterruptBefore(nodes ...string) Option {
	return func(c *config) { c.interruptBefore = addSet(c.interruptBefore, nodes) }
}

// InterruptAfter pauses a run after a step that ran any of nodes.
func InterruptAfter(nodes ...string) Option {
	return func(c *config) { c.interruptAfter = addSet(c.interruptAfter, nodes) }
}

// Events selects the kinds of event Stream yields (default: all).
// EventCustom selects the custom events, every name of them unless
// CustomEvents or SkipCustomEvents narrow them.
func Events(kinds ...EventKind) Option {
	return func(c *config) {
		c.events.kinds = 0
		for _, k := range kinds {
			c.events.kinds |= k.mask()
		}
		if c.events.names != nil && c.events.names.only != nil {
			c.events.kinds |= EventCustom.mask()
		}
	}
}

// CustomEvents selects the custom events Stream yields by name
// (Event.Name): the names of payloads from packages above graph (Named)
// and "custom" for values that name none. Custom events of other names are
// not yielded, and Wants reports false for them, so their producers skip
// the work. It selects EventCustom along with the kinds Events selects.
func CustomEvents(names ...string) Option {
	return func(c *config) {
		c.events = c.events.withNames(func(n *nameFilter) { n.only = append(make([]string, 0, len(names)), names...) })
		c.events.kinds |= EventCustom.mask()
	}
}

// SkipCustomEvents leaves the custom events named out of the stream, with
// every other one still yielded; Wants reports false for them, so their
// producers skip the work. Several calls add up.
func SkipCustomEvents(names ...string) Option {
	return func(c *config) {
		c.events = c.events.withNames(func(n *nameFilter) { n.skip = append(slices.Clip(n.skip), names...) })
	}
}

func addSet(m map[string]bool, names []string) map[string]bool {
	out := make(map[string]bool, len(m)+len(names))
	for k := range m {
		out[k] = true
	}
	for _, n := range names {
		out[n] = true
	}
	return out
}
