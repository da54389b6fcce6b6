// Package agentevent defines the events of an agent's life in a run —
// built, started, ended — and the events about agents' work that several
// packages publish: what a model call saw (a snapshot) and warnings.
//
// The packages that build and run agents (nodes/react, factory, window,
// workflows) publish them with graph.Emit; the CLI, the HTTP server, the
// tracer and telemetry read them, switching on the payload's type or, for
// a recorded event, on its name. The package imports nothing of coorflow,
// so that all of them can import it.
package agentevent
