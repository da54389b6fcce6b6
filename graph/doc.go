// Package graph is coorflow's engine: a graph of nodes over typed, named
// channels, run in concurrent supersteps, with one event stream.
//
// State is a set of channels. Go code reaches them through typed keys
// (NewKey), so reads return a T and writes take a T; each channel has a
// reducer (last value, Append, Merge, Sum or a custom Reduce) and is stored
// as JSON through its key's type. Workflows declared in files use
// NewDynamicKey.
//
// A node reads the state and returns a Command: writes (Update), explicit
// routing (Goto, which replaces the node's own edges for that run), and
// fan-out (Send, one task per Packet, each seeing the packet's writes as a
// private overlay).
//
// A run proceeds in steps. Every task of a step sees the state as of the
// step's start and runs concurrently with the others, none waiting for
// another to end (MaxConcurrency bounds them; a goroutine that ends a task
// may take one not yet started); their writes are applied in task order —
// node name, then send index — with one reducer application per channel,
// so results never depend on timing.
// Two writes to a last-value channel in one step are an error naming both
// writers. Then static edges, conditional edges (a Router, evaluated on the
// new state), joins (AddJoin: run once all sources have run) and deferred
// nodes decide the next step.
//
// Faults: a step limit (ErrStepLimit), cancellation through the context, a
// panic turned into a *NodeError with its stack, and per node a retry
// policy, a timeout and an error handler that may route to a fallback.
//
// Tasks inside a node: a node that finds its work at run time — a team's
// agents, one per step of a plan it was given — starts it with Schedule.
// The graph stays static (a task is no node: it has no channels and
// routes nowhere), yet the engine sees each task as a unit of work: it
// runs concurrently with its siblings, once its dependencies are done and
// under the call's limit; it may fail (skipping its dependents, or
// stopping the call), be retried, or pause on Interrupt. Its path is its
// node's and its key ("coor/team/step:s1"): its events stream under it and
// its questions are answered by it (ResumeAt). Its value is journaled like
// a Do call, so a resume, a retry of the node or a restart after a crash
// returns the value of a done task without running it again. State lists
// the tasks of an unfinished node (StepTask.Tasks). A runner may take over
// where each attempt runs with WithTaskExecutor.
//
// Stream yields every event of a run — run, step, node, update, values,
// checkpoint, interrupt, error — and the custom events that nodes Emit,
// each with its Path. Packages above this one define their own custom
// events as payload types that name themselves (Named).
// Invoke runs to the end and returns the final state.
package graph
