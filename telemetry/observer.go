package telemetry

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
)

// TracerName is the instrumentation name of coorflow's spans.
const TracerName = "github.com/coorflow/coorflow"

// Attribute keys coorflow sets on its spans. Model, tool and agent spans
// also carry the OpenTelemetry GenAI attributes (gen_ai.*).
const (
	AttrGraph      = attribute.Key("coorflow.graph")
	AttrPath       = attribute.Key("coorflow.path")
	AttrNode       = attribute.Key("coorflow.node")
	AttrStep       = attribute.Key("coorflow.step")
	AttrStepNodes  = attribute.Key("coorflow.step.nodes")
	AttrAttempt    = attribute.Key("coorflow.attempt")
	AttrRunStatus  = attribute.Key("coorflow.run.status")
	AttrTier       = attribute.Key("coorflow.model.tier")
	AttrReplayed   = attribute.Key("coorflow.replayed")
	AttrAgent      = attribute.Key("coorflow.agent")
	AttrToolStatus = attribute.Key("coorflow.tool.status")

	// Usage beyond the GenAI conventions: on a model call span its own,
	// on a run span the sum of its calls (replayed ones cost nothing).
	AttrCachedInputTokens = attribute.Key("coorflow.usage.cached_input_tokens")
	AttrCacheWriteTokens  = attribute.Key("coorflow.usage.cache_write_tokens")
	AttrReasoningTokens   = attribute.Key("coorflow.usage.reasoning_tokens")
	AttrUsageEstimated    = attribute.Key("coorflow.usage.estimated")
	AttrInputTokens       = attribute.Key("coorflow.usage.input_tokens")
	AttrOutputTokens      = attribute.Key("coorflow.usage.output_tokens")
	AttrModelCalls        = attribute.Key("coorflow.usage.model_calls")
	// AttrCostUSD is the cost in US dollars; absent when a model has no
	// price (AttrUnpricedCalls counts those calls on a run span).
	AttrCostUSD       = attribute.Key("coorflow.cost.usd")
	AttrUnpricedCalls = attribute.Key("coorflow.cost.unpriced_calls")

	AttrGenAIOperation    = attribute.Key("gen_ai.operation.name")
	AttrGenAIModel        = attribute.Key("gen_ai.request.model")
	AttrGenAIInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	AttrGenAIOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	AttrGenAIToolName     = attribute.Key("gen_ai.tool.name")
	AttrGenAIToolCallID   = attribute.Key("gen_ai.tool.call.id")
	AttrGenAIAgentName    = attribute.Key("gen_ai.agent.name")
)

// Observer turns the events of one run into spans: one per run (and per
// subgraph run), per step, per node, per model call, per tool call and per
// agent, each parented by the event's path. Create one per run with
// NewObserver, pass it every event in order, and call Finish when the
// stream ends. Its methods are safe for concurrent use.
type Observer struct {
	mu     sync.Mutex
	ctx    context.Context
	tracer trace.Tracer
	attrs  []attribute.KeyValue

	runs   map[string]*runSpans   // by run path
	nodes  map[string]trace.Span  // by task path
	agents map[string]trace.Span  // by scope path
	tools  map[toolKey]trace.Span // by path and call id
}

type runSpans struct {
	spend llm.Spend
	span  trace.Span
	ctx   context.Context
	step  trace.Span
	sctx  context.Context
}

type toolKey struct{ path, id string }

// NewObserver returns an Observer whose run span is a child of the span in
// ctx (if any) and carries attrs.
func NewObserver(ctx context.Context, tracer trace.Tracer, attrs ...attribute.KeyValue) *Observer {
	return &Observer{
		ctx: ctx, tracer: tracer, attrs: attrs,
		runs:   make(map[string]*runSpans),
		nodes:  make(map[string]trace.Span),
		agents: make(map[string]trace.Span),
		tools:  make(map[toolKey]trace.Span),
	}
}

// Observe returns a function that feeds an Observer built from ctx and
// tracer; for callers that only forward events and let the stream's
// run_end or error event close the spans.
func Observe(ctx context.Context, tracer trace.Tracer, attrs ...attribute.KeyValue) func(graph.Event) {
	return NewObserver(ctx, tracer, attrs...).Observe
}

// Trace wraps a stream so that every event it yields is observed; the spans
// are closed when the stream ends or its consumer stops.
func Trace(ctx context.Context, tracer trace.Tracer, events iter.Seq2[graph.Event, error], attrs ...attribute.KeyValue) iter.Seq2[graph.Event, error] {
	return func(yield func(graph.Event, error) bool) {
		o := NewObserver(ctx, tracer, attrs...)
		var last error
		for ev, err := range events {
			o.Observe(ev)
			last = err
			if !yield(ev, err) {
				o.Finish(errors.New("telemetry: stream consumer stopped"))
				return
			}
		}
		o.Finish(last)
	}
}

// Observe records one event.
func (o *Observer) Observe(ev graph.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch ev.Kind {
	case graph.EventRunStart:
		o.runStart(ev)
	case graph.EventRunEnd:
		o.runEnd(ev)
	case graph.EventError:
		o.runError(ev)
	case graph.EventStepStart:
		o.stepStart(ev)
	case graph.EventStepEnd:
		if r := o.runs[ev.Path]; r != nil && r.step != nil {
			r.step.End(trace.WithTimestamp(ev.Time))
			r.step, r.sctx = nil, nil
		}
	case graph.EventNodeStart:
		o.nodeStart(ev)
	case graph.EventNodeEnd:
		o.nodeEnd(ev)
	case graph.EventCustom:
		o.custom(ev)
	case graph.EventInterrupt:
		o.interrupt(ev)
	case graph.EventCheckpoint:
		if r := o.runs[ev.Path]; r != nil {
			id, _ := ev.Data.(string)
			r.span.AddEvent("checkpoint", trace.WithTimestamp(ev.Time),
				trace.WithAttributes(attribute.String("coorflow.checkpoint", id), AttrStep.Int(ev.Step)))
		}
	}
}

// custom records the custom events of coorflow's packages: model and tool
// calls as spans, an agent's run as a span, an agent built and a warning
// as span events.
func (o *Observer) custom(ev graph.Event) {
	switch d := ev.Data.(type) {
	case llm.ModelCall:
		o.modelCall(ev, d)
	case tools.CallEvent:
		o.toolCall(ev, d)
	case tools.ResultEvent:
		o.toolResult(ev, d)
	case agentevent.Started:
		o.agentStart(ev, d)
	case agentevent.Ended:
		o.agentEnd(ev, d)
	case agentevent.Created:
		o.spanEvent(ev, AttrGenAIAgentName.String(d.Agent), AttrTier.String(d.Tier))
	case agentevent.Warning:
		o.spanEvent(ev)
	}
}

// Finish ends every span still open, marking them failed with err when it
// is not nil. Call it when a stream ends without its final event (the
// consumer stopped, the process is shutting down).
func (o *Observer) Finish(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closeUnder("", time.Now(), err)
}

// closeUnder ends the open spans at paths that start with prefix, innermost
// first, marking them failed with err when it is not nil.
func (o *Observer) closeUnder(prefix string, ts time.Time, err error) {
	end := func(s trace.Span) {
		if err != nil {
			s.RecordError(err, trace.WithTimestamp(ts))
			s.SetStatus(codes.Error, err.Error())
		}
		s.End(trace.WithTimestamp(ts))
	}
	for k, s := range o.tools {
		if strings.HasPrefix(k.path, prefix) {
			end(s)
			delete(o.tools, k)
		}
	}
	for p, s := range o.agents {
		if strings.HasPrefix(p, prefix) {
			end(s)
			delete(o.agents, p)
		}
	}
	for {
		// The deepest open node or run, so children end before parents.
		deepest, depth := "", -1
		for p := range o.nodes {
			if d := strings.Count(p, "/"); strings.HasPrefix(p, prefix) && d > depth {
				deepest, depth = p, d
			}
		}
		for p := range o.runs {
			if d := strings.Count(p, "/"); strings.HasPrefix(p, prefix) && d >= depth {
				deepest, depth = p, d
			}
		}
		if depth < 0 {
			return
		}
		if r := o.runs[deepest]; r != nil { // a run ends before the node it runs in
			if r.step != nil {
				end(r.step)
			}
			end(r.span)
			delete(o.runs, deepest)
			continue
		}
		end(o.nodes[deepest])
		delete(o.nodes, deepest)
	}
}

// closeRun ends the run at path and everything open below it.
func (o *Observer) closeRun(path string, ts time.Time, err error) {
	o.closeUnder(path+"/", ts, err)
	r := o.runs[path]
	delete(o.runs, path)
	for _, s := range []trace.Span{r.step, r.span} {
		if s == nil {
			continue
		}
		if err != nil {
			s.SetStatus(codes.Error, err.Error())
		}
		s.End(trace.WithTimestamp(ts))
	}
}

// parent returns the context of the innermost open span at path or above
// it: an agent scope, a subgraph's run (its current step), or a node.
func (o *Observer) parent(path string) context.Context {
	for p := path; p != ""; p = dir(p) {
		if r := o.runs[p]; r != nil {
			if r.sctx != nil {
				return r.sctx
			}
			return r.ctx
		}
		if s := o.agents[p]; s != nil {
			return trace.ContextWithSpan(o.ctx, s)
		}
		if s := o.nodes[p]; s != nil {
			return trace.ContextWithSpan(o.ctx, s)
		}
	}
	return o.ctx
}

func dir(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return ""
}

func base(path string) string { return path[strings.LastIndexByte(path, '/')+1:] }

func (o *Observer) runStart(ev graph.Event) {
	if old := o.runs[ev.Path]; old != nil { // a subgraph's run that never ended
		o.closeRun(ev.Path, ev.Time, errors.New("telemetry: run did not finish"))
	}
	attrs := []attribute.KeyValue{AttrPath.String(ev.Path)}
	parent := o.parent(ev.Path)
	if len(o.runs) == 0 {
		attrs = append(attrs, AttrGraph.String(ev.Path))
		attrs = append(attrs, o.attrs...)
		parent = o.ctx
	}
	ctx, span := o.tracer.Start(parent, "run "+base(ev.Path),
		trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
	o.runs[ev.Path] = &runSpans{span: span, ctx: ctx}
}

func (o *Observer) runEnd(ev graph.Event) {
	r := o.runs[ev.Path]
	if r == nil {
		return
	}
	if r.step != nil {
		r.step.End(trace.WithTimestamp(ev.Time))
	}
	if st, ok := ev.Data.(graph.Status); ok {
		r.span.SetAttributes(AttrRunStatus.String(string(st)))
	}
	r.span.End(trace.WithTimestamp(ev.Time))
	delete(o.runs, ev.Path)
}

// runError fails the run at ev.Path and closes what it left open.
func (o *Observer) runError(ev graph.Event) {
	r := o.runs[ev.Path]
	if r == nil {
		return
	}
	if ev.Err != nil {
		r.span.RecordError(ev.Err, trace.WithTimestamp(ev.Time))
		r.span.SetStatus(codes.Error, ev.Err.Error())
	}
	r.span.SetAttributes(AttrRunStatus.String("error"))
	o.closeUnder(ev.Path+"/", ev.Time, nil)
	if r.step != nil {
		r.step.SetStatus(codes.Error, "run failed")
		r.step.End(trace.WithTimestamp(ev.Time))
	}
	r.span.End(trace.WithTimestamp(ev.Time))
	delete(o.runs, ev.Path)
}

func (o *Observer) stepStart(ev graph.Event) {
	r := o.runs[ev.Path]
	if r == nil {
		return
	}
	if r.step != nil {
		r.step.End(trace.WithTimestamp(ev.Time))
	}
	attrs := []attribute.KeyValue{AttrStep.Int(ev.Step), AttrPath.String(ev.Path)}
	if nodes, ok := ev.Data.([]string); ok {
		attrs = append(attrs, AttrStepNodes.StringSlice(nodes))
	}
	r.sctx, r.step = o.tracer.Start(r.ctx, "step "+strconv.Itoa(ev.Step),
		trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
}

func (o *Observer) nodeStart(ev graph.Event) {
	_, span := o.tracer.Start(o.parent(dir(ev.Path)), "node "+ev.Node,
		trace.WithTimestamp(ev.Time), trace.WithAttributes(
			AttrNode.String(ev.Node), AttrPath.String(ev.Path), AttrStep.Int(ev.Step)))
	o.nodes[ev.Path] = span
}

func (o *Observer) nodeEnd(ev graph.Event) {
	span := o.nodes[ev.Path]
	if span == nil {
		return
	}
	failed := ev.Err
	// A subgraph's run, agents and tools inside the node end with it.
	delete(o.nodes, ev.Path)
	if o.runs[ev.Path] != nil {
		o.closeRun(ev.Path, ev.Time, failed)
	}
	o.closeUnder(ev.Path+"/", ev.Time, failed)
	span.SetAttributes(AttrAttempt.Int(ev.Attempt))
	if ev.Err != nil {
		span.RecordError(ev.Err, trace.WithTimestamp(ev.Time))
		span.SetStatus(codes.Error, ev.Err.Error())
	}
	span.End(trace.WithTimestamp(ev.Time))
}

func (o *Observer) modelCall(ev graph.Event, mc llm.ModelCall) {
	attrs := []attribute.KeyValue{
		AttrGenAIOperation.String("chat"), AttrGenAIModel.String(mc.Model),
		AttrGenAIInputTokens.Int(mc.PromptTokens), AttrGenAIOutputTokens.Int(mc.CompletionTokens),
		AttrTier.String(mc.Tier), AttrPath.String(ev.Path),
	}
	if mc.Agent != "" {
		attrs = append(attrs, AttrAgent.String(mc.Agent))
	}
	if mc.Replayed {
		attrs = append(attrs, AttrReplayed.Bool(true))
	}
	attrs = append(attrs, AttrCachedInputTokens.Int(mc.CachedTokens), AttrReasoningTokens.Int(mc.ReasoningTokens))
	if mc.CacheWriteTokens > 0 {
		attrs = append(attrs, AttrCacheWriteTokens.Int(mc.CacheWriteTokens))
	}
	if mc.Estimated {
		attrs = append(attrs, AttrUsageEstimated.Bool(true))
	}
	if mc.CostUSD != nil {
		attrs = append(attrs, AttrCostUSD.Float64(*mc.CostUSD))
	}
	for p, r := range o.runs {
		if p == ev.Path || strings.HasPrefix(ev.Path, p+"/") {
			r.spend.Add(mc)
			r.span.SetAttributes(spendAttrs(r.spend)...)
		}
	}
	_, span := o.tracer.Start(o.parent(ev.Path), "chat "+mc.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(ev.Time.Add(-mc.Duration)), trace.WithAttributes(attrs...))
	if mc.Err != "" {
		span.SetStatus(codes.Error, mc.Err)
	}
	span.End(trace.WithTimestamp(ev.Time))
}

func toolAttrs(agent, id, name, path string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		AttrGenAIOperation.String("execute_tool"), AttrGenAIToolName.String(name),
		AttrGenAIToolCallID.String(id), AttrPath.String(path),
	}
	if agent != "" {
		attrs = append(attrs, AttrAgent.String(agent))
	}
	return attrs
}

func (o *Observer) toolCall(ev graph.Event, tc tools.CallEvent) {
	_, span := o.tracer.Start(o.parent(ev.Path), "execute_tool "+tc.Name,
		trace.WithTimestamp(ev.Time), trace.WithAttributes(toolAttrs(tc.Agent, tc.ID, tc.Name, ev.Path)...))
	o.tools[toolKey{ev.Path, tc.ID}] = span
}

func (o *Observer) toolResult(ev graph.Event, tr tools.ResultEvent) {
	k := toolKey{ev.Path, tr.ID}
	span := o.tools[k]
	if span == nil { // a result without its call: the span covers its duration
		_, span = o.tracer.Start(o.parent(ev.Path), "execute_tool "+tr.Name,
			trace.WithTimestamp(ev.Time.Add(-tr.Duration)), trace.WithAttributes(toolAttrs(tr.Agent, tr.ID, tr.Name, ev.Path)...))
	}
	delete(o.tools, k)
	span.SetAttributes(AttrToolStatus.String(tr.Status))
	if tr.Status == "failed" {
		span.SetStatus(codes.Error, "tool call failed")
	}
	span.End(trace.WithTimestamp(ev.Time))
}

func (o *Observer) agentStart(ev graph.Event, ae agentevent.Started) {
	if old := o.agents[ev.Path]; old != nil {
		old.End(trace.WithTimestamp(ev.Time))
	}
	attrs := []attribute.KeyValue{AttrGenAIOperation.String("invoke_agent"), AttrGenAIAgentName.String(ae.Agent), AttrPath.String(ev.Path)}
	if ae.Tier != "" {
		attrs = append(attrs, AttrTier.String(ae.Tier))
	}
	_, span := o.tracer.Start(o.parent(dir(ev.Path)), "invoke_agent "+ae.Agent,
		trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
	o.agents[ev.Path] = span
}

func (o *Observer) agentEnd(ev graph.Event, ae agentevent.Ended) {
	span := o.agents[ev.Path]
	if span == nil {
		return
	}
	delete(o.agents, ev.Path)
	if ae.Err != "" {
		span.SetStatus(codes.Error, ae.Err)
	}
	span.End(trace.WithTimestamp(ev.Time))
}

func (o *Observer) interrupt(ev graph.Event) {
	r := o.runs[ev.Path]
	if r == nil {
		return
	}
	ins, _ := ev.Data.([]graph.InterruptInfo)
	ids := make([]string, len(ins))
	paths := make([]string, len(ins))
	for i, in := range ins {
		ids[i], paths[i] = in.ID, in.Path
	}
	r.span.AddEvent("interrupt", trace.WithTimestamp(ev.Time), trace.WithAttributes(
		attribute.StringSlice("coorflow.interrupt.ids", ids), attribute.StringSlice("coorflow.interrupt.paths", paths)))
}

// spanEvent adds ev, named as it is, as an event of the innermost span at
// its path.
func (o *Observer) spanEvent(ev graph.Event, attrs ...attribute.KeyValue) {
	span := trace.SpanFromContext(o.parent(ev.Path))
	attrs = append([]attribute.KeyValue{AttrPath.String(ev.Path)}, attrs...)
	span.AddEvent(ev.Name(), trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
}

// spendAttrs are the usage attributes of a run span.
func spendAttrs(s llm.Spend) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		AttrModelCalls.Int(s.Calls), AttrInputTokens.Int(s.PromptTokens), AttrOutputTokens.Int(s.CompletionTokens),
		AttrCachedInputTokens.Int(s.CachedTokens), AttrReasoningTokens.Int(s.ReasoningTokens),
		AttrCostUSD.Float64(s.CostUSD),
	}
	if s.UnpricedCalls > 0 {
		attrs = append(attrs, AttrUnpricedCalls.Int(s.UnpricedCalls))
	}
	return attrs
}
