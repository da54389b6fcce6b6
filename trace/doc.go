// Package trace records runs and plays them back: every event of a run,
// the context snapshot of each model call (what the agent saw: parts,
// tokens, what was omitted or truncated and why) and each model call's
// request and response, in a Store with an index of runs. The run viewer
// (package server) reads them back as a Timeline and AgentDetails, and
// Replay runs a recorded run again offline, answering its model calls
// from the recording with a Cassette, and reports where it diverged.
//
// Stores: trace/sqlite (one file), trace/postgres (several machines) and
// trace/memory (tests); trace/tracetest is the suite they all pass.
package trace
