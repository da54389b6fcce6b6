// Package telemetry turns a run's events into OpenTelemetry spans and sets
// up trace export from the standard OTEL_* environment variables.
//
// An Observer builds, for one run, a tree of spans from the run's
// graph.Event stream, each parented by the event's path:
//
//	run <graph>                       coorflow.graph, coorflow.run.status, the caller's attributes
//	└─ step <n>                       coorflow.step, coorflow.step.nodes
//	   └─ node <name>                 coorflow.node, coorflow.attempt; error status when it failed
//	      ├─ run <node>               a subgraph's run, with its own steps and nodes
//	      ├─ invoke_agent <agent>     gen_ai.agent.name (agent_start .. agent_end)
//	      │  ├─ chat <model>          gen_ai.request.model, gen_ai.usage.input_tokens/output_tokens, coorflow.model.tier
//	      │  └─ execute_tool <tool>   gen_ai.tool.name, gen_ai.tool.call.id, coorflow.tool.status
//	      └─ chat <model>             a model call made by the node itself
//
// Span times are the events' times, so spans can be built from a recorded
// stream as well as a live one. Interrupts and checkpoints become span
// events of the run span; an agent built (agent_created) and a warning,
// events of the innermost span at their path. The run span is a child of the span in the
// context given to NewObserver: the HTTP server puts there the caller's
// span, taken from the request's traceparent header.
//
//	obs := telemetry.NewObserver(ctx, otel.Tracer(telemetry.TracerName))
//	for ev, err := range runnable.Stream(ctx, input) {
//		obs.Observe(ev)
//		...
//	}
//	obs.Finish(nil)
//
// Setup installs a tracer provider whose exporter OTEL_TRACES_EXPORTER
// selects (otlp, console or none). The OTLP exporter is this package's own:
// OTLP over HTTP with protobuf, encoded without the protobuf runtime, so
// that a program that exports traces does not link gRPC.
package telemetry
