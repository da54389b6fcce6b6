package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/tools"
)

// printer shows a run as it goes.
type printer interface {
	// shows reports whether it shows the events of that name
	// (graph.Event.Name).
	shows(name string) bool
	begin()
	event(ev graph.Event)
	// question shows a question before its answer is read.
	question(q graph.InterruptInfo)
	// waiting says the run waits for answers and how to give them;
	// shown says the questions were shown already.
	waiting(ins []graph.InterruptInfo, shown bool)
	done(s graph.State)
	failed(err error, cancelled bool)
}

// textPrinter prints one line per node and agent event, with the time
// since the run started.
type textPrinter struct {
	r     *runner
	w     io.Writer
	start time.Time
	// pending are nodes that ended, printed with their writes.
	pending []graph.Event
	steps   map[string]string // step id -> title, from the latest plan
	// newAgents are the agents the latest plan declared; built those
	// built in this run.
	newAgents []string
	built     map[string]bool
	// tokenPath is the source of the tokens being printed, if any.
	tokenPath string
	// streamed is the text printed as tokens, by source, the latest
	// few and each up to maxStreamedKept bytes: an output that was
	// printed as it streamed is not printed again at the end.
	streamed []*streamedText
}

// streamedText is the text one source streamed.
type streamedText struct {
	path string
	text strings.Builder
}

// What a textPrinter keeps of streamed text.
const (
	maxStreamedKept    = 1 << 20
	maxStreamedSources = 8
)

// keep remembers text streamed by path.
func (p *textPrinter) keep(path, text string) {
	i := slices.IndexFunc(p.streamed, func(st *streamedText) bool { return st.path == path })
	if i < 0 {
		if len(p.streamed) == maxStreamedSources {
			p.streamed = slices.Delete(p.streamed, 0, 1)
		}
		p.streamed = append(p.streamed, &streamedText{path: path})
		i = len(p.streamed) - 1
	}
	if b := &p.streamed[i].text; b.Len()+len(text) <= maxStreamedKept {
		b.WriteString(text)
	}
}

// unstreamed returns what of out was not printed as tokens already: all
// of it, or what follows a source's streamed text when out begins with
// it (the reporter adds its references to what it streamed).
func (p *textPrinter) unstreamed(out string) (string, bool) {
	best := ""
	for _, st := range p.streamed {
		s := strings.TrimSpace(llm.StripThink(st.text.String()))
		if s != "" && len(s) > len(best) && strings.HasPrefix(out, s) {
			best = s
		}
	}
	if best == "" {
		return out, false
	}
	return strings.TrimSpace(out[len(best):]), true
}

func newTextPrinter(r *runner) *textPrinter {
	return &textPrinter{r: r, w: r.app.stdout, steps: map[string]string{}, built: map[string]bool{}}
}

// textShown are the events a textPrinter shows, tokens aside.
var textShown = []string{
	graph.EventRunStart.String(), graph.EventNodeStart.String(), graph.EventNodeEnd.String(), graph.EventUpdate.String(),
	graph.EventStepEnd.String(), agentevent.EventCreated, agentevent.EventStart, agentevent.EventEnd, tools.EventToolResult,
	agentevent.EventWarning, llm.EventModelCall, graph.EventInterrupt.String(), graph.EventRunEnd.String(), graph.EventError.String(),
}

func (p *textPrinter) shows(name string) bool {
	return slices.Contains(textShown, name) || (name == llm.EventToken && p.r.flags.stream)
}

func (p *textPrinter) begin() {
	p.start = time.Now()
	if pl := p.r.plan; pl != nil {
		for _, s := range pl.Steps {
			p.steps[s.ID] = s.Title
		}
	}
	fmt.Fprintf(p.w, "%s · thread %s\n", p.r.r.Name(), p.r.thread)
}

// line prints one line at the depth of path.
func (p *textPrinter) line(path, text string) {
	p.endTokens()
	depth := strings.Count(path, "/")
	if depth > 1 {
		depth = 2
	}
	fmt.Fprintf(p.w, "%6.2fs %s%s\n", time.Since(p.start).Seconds(), strings.Repeat("  ", depth), text)
}

func (p *textPrinter) endTokens() {
	if p.tokenPath != "" {
		fmt.Fprintln(p.w)
		p.tokenPath = ""
	}
}

func (p *textPrinter) event(ev graph.Event) {
	switch ev.Kind {
	case graph.EventNodeStart:
		p.flush()
		if !isAgentPath(ev.Path) {
			p.line(ev.Path, "▶ "+nodeLabel(ev))
		}
	case graph.EventNodeEnd:
		if isAgentPath(ev.Path) {
			return
		}
		if ev.Err != nil {
			p.line(ev.Path, fmt.Sprintf("✗ %s  %s", nodeLabel(ev), oneLine(ev.Err.Error(), 200)))
			return
		}
		p.pending = append(p.pending, ev)
	case graph.EventUpdate:
		p.updated(ev)
	case graph.EventStepEnd:
		p.flush()
	case graph.EventCustom:
		p.custom(ev)
	case graph.EventInterrupt:
		ins, _ := ev.Data.([]graph.InterruptInfo)
		for _, in := range ins {
			for i, e := range p.pending {
				if e.Node == in.Node {
					p.pending = append(p.pending[:i], p.pending[i+1:]...)
					p.line(e.Path, fmt.Sprintf("? %s  asks a question", nodeLabel(e)))
					break
				}
			}
		}
	}
}

// custom prints the events of agents, tools and models.
func (p *textPrinter) custom(ev graph.Event) {
	switch d := ev.Data.(type) {
	case agentevent.Created:
		p.built[d.Agent] = true
		skills := ""
		if len(d.Skills) > 0 {
			skills = ", skills " + strings.Join(d.Skills, ", ")
		}
		p.line(ev.Path+"/agent", fmt.Sprintf("+ %s  built: tier %s, tools %s%s — %s", d.Agent, d.Tier, orNone(d.Tools), skills, oneLine(d.Summary, 100)))
	case agentevent.Started:
		p.line(ev.Path, fmt.Sprintf("▶ %s%s", runLabel(d.Agent, d.Run), p.stepTitle(d.Run)))
	case agentevent.Ended:
		if d.Err != "" {
			p.line(ev.Path, fmt.Sprintf("✗ %s  %s", runLabel(d.Agent, d.Run), oneLine(d.Err, 160)))
			return
		}
		p.line(ev.Path, fmt.Sprintf("✓ %s  %s", runLabel(d.Agent, d.Run), answerSummary(d.Output)))
	case llm.ModelCall:
		// The factory's stages, which have no agent events of their own.
		stage, name, ok := strings.Cut(d.Agent, ":")
		if !ok || (stage != "builder" && stage != "metaprompt") {
			return
		}
		what := map[string]string{"builder": "build %s: chose its tier, tools and brief", "metaprompt": "meta-prompt %s: wrote its system prompt"}[stage]
		if d.Err != "" {
			p.line(ev.Path, fmt.Sprintf("✗ "+what+": %s", name, oneLine(d.Err, 120)))
			return
		}
		p.line(ev.Path, "· "+fmt.Sprintf(what, name))
	case tools.ResultEvent:
		p.line(ev.Path+"/tool", fmt.Sprintf("· %s %s %s", d.Name, d.Status, d.Duration.Round(time.Millisecond)))
	case agentevent.Warning:
		p.line(ev.Path, fmt.Sprintf("! %v", d))
	case llm.Token:
		if ev.Path != p.tokenPath {
			p.endTokens()
			fmt.Fprintf(p.w, "        [%s] ", agentOf(ev.Path))
			p.tokenPath = ev.Path
		}
		fmt.Fprint(p.w, string(d))
		p.keep(ev.Path, string(d))
	}
}

// updated prints the ended node the writes belong to, with what they say.
func (p *textPrinter) updated(ev graph.Event) {
	for i, e := range p.pending {
		if e.Path != ev.Path {
			continue
		}
		p.pending = append(p.pending[:i], p.pending[i+1:]...)
		p.ended(e, p.detail(ev.Writes))
		return
	}
}

// flush prints the nodes that ended without writes.
func (p *textPrinter) flush() {
	for _, e := range p.pending {
		p.ended(e, "")
	}
	p.pending = p.pending[:0]
}

func (p *textPrinter) ended(e graph.Event, detail string) {
	text := fmt.Sprintf("✓ %s", nodeLabel(e))
	if detail != "" {
		text += "  " + detail
	}
	p.line(e.Path, text)
}

// detail says in a few words what a node wrote.
func (p *textPrinter) detail(ws []graph.Write) string {
	var parts []string
	for _, w := range ws {
		switch v := w.Value().(type) {
		case *plan.Plan:
			if v == nil {
				continue // a turn begins: the last turn's plan is cleared
			}
			if !ran(v) {
				parts = append(parts, p.planned(v))
			} else {
				parts = append(parts, results(v))
				if reused := p.reused(); len(reused) > 0 {
					parts = append(parts, "reused agents built in an earlier run: "+strings.Join(reused, ", "))
				}
			}
		default:
			if d := describeWrite(w.Channel(), v); d != "" {
				parts = append(parts, d)
			}
		}
	}
	// A plan's lines come last.
	slices.SortStableFunc(parts, func(a, b string) int { return strings.Count(a, "\n") - strings.Count(b, "\n") })
	return strings.Join(parts, "; ")
}

// ran reports whether a step of pl has a result: a plan without one is a
// new plan.
func ran(pl *plan.Plan) bool {
	for _, s := range pl.Steps {
		if s.Result != nil {
			return true
		}
	}
	return false
}

// planned describes a new plan and remembers its step titles.
func (p *textPrinter) planned(pl *plan.Plan) string {
	if pl == nil {
		return ""
	}
	for _, s := range pl.Steps {
		p.steps[s.ID] = s.Title
	}
	p.newAgents = p.newAgents[:0]
	for _, a := range pl.NewAgentsNeeded {
		p.newAgents = append(p.newAgents, a.Name)
	}
	if len(pl.Steps) == 0 {
		return fmt.Sprintf("enough is known: %q", pl.Title)
	}
	text := fmt.Sprintf("plan %q: %d steps", pl.Title, len(pl.Steps))
	if n := len(pl.NewAgentsNeeded); n > 0 {
		text += fmt.Sprintf(", %d new agents", n)
	}
	for _, a := range pl.NewAgentsNeeded {
		text += fmt.Sprintf("\n%snew agent %s — %s", planIndent, a.Name, oneLine(a.Role, 80))
	}
	width := 0
	for _, s := range pl.Steps {
		width = max(width, len(s.AgentName))
	}
	for _, s := range pl.Steps {
		dep := ""
		if len(s.DependsOn) > 0 {
			dep = " (after " + strings.Join(s.DependsOn, ", ") + ")"
		}
		text += fmt.Sprintf("\n%s%s %-*s  %s%s", planIndent, s.ID, width, s.AgentName, oneLine(s.Title, 80), dep)
	}
	return text
}

// planIndent aligns the lines of a plan under its node's line.
const planIndent = "                "

// reused are the new agents of the plan that were not built in this run.
func (p *textPrinter) reused() []string {
	var out []string
	for _, name := range p.newAgents {
		if !p.built[name] {
			out = append(out, name)
		}
	}
	p.newAgents = nil
	return out
}

// results counts the plan's steps by status.
func results(pl *plan.Plan) string {
	if pl == nil {
		return ""
	}
	counts := map[string]int{}
	for _, s := range pl.Steps {
		if s.Result != nil {
			counts[s.Result.Status]++
		}
	}
	var parts []string
	for _, st := range []string{plan.StepDone, plan.StepFailed, plan.StepSkipped} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "steps: " + strings.Join(parts, ", ") + fmt.Sprintf(" of %d", len(pl.Steps))
}

func describeWrite(channel string, v any) string {
	if v == "" {
		return "" // a channel of the last turn cleared
	}
	switch channel {
	case nodes.Request.Name():
		return fmt.Sprintf("handed off: %q", oneLine(fmt.Sprint(v), 90))
	case nodes.Answer.Name():
		s := fmt.Sprint(v)
		return fmt.Sprintf("answer: %d lines", strings.Count(strings.TrimSpace(s), "\n")+1)
	case nodes.CurrentStep.Name():
		return fmt.Sprintf("next: step %v", v)
	case nodes.Background.Name():
		return fmt.Sprintf("background: %d characters", utf8.RuneCountInString(fmt.Sprint(v)))
	case nodes.Feedback.Name():
		return fmt.Sprintf("feedback: %q", oneLine(fmt.Sprint(v), 90))
	case nodes.Input.Name(), nodes.Messages.Name(), nodes.Locale.Name(), nodes.Iterations.Name(), nodes.Findings.Name(), nodes.Turns.Name():
		return ""
	case nodes.CurrentTurn.Name():
		// A turn after the first begins: say which.
		if t, ok := v.(nodes.Turn); ok && t.N > 1 && t.Answer == "" && t.Plan == "" && t.Note == "" {
			return fmt.Sprintf("turn %d", t.N)
		}
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return channel + " written"
	}
	return fmt.Sprintf("%s = %s", channel, oneLine(string(b), 80))
}

func (p *textPrinter) stepTitle(run string) string {
	id, _, _ := strings.Cut(run, "#")
	if t := p.steps[id]; t != "" {
		return "  " + t
	}
	return ""
}

func (p *textPrinter) question(q graph.InterruptInfo) {
	p.endTokens()
	fmt.Fprintln(p.w)
	fmt.Fprint(p.w, describeQuestion(q))
}

func (p *textPrinter) waiting(ins []graph.InterruptInfo, shown bool) {
	p.flush()
	for _, q := range questions(ins) {
		if !shown {
			p.question(q)
		}
	}
	fmt.Fprintf(p.w, "\nusage: %s\n", p.r.used.Spent())
	fmt.Fprintf(p.w, "the run waits for an answer; thread %s is saved in %s. Continue with:\n  %s\n",
		p.r.thread, p.r.db.where, p.r.resumeCommand(ins))
}

func (p *textPrinter) done(s graph.State) {
	p.flush()
	p.endTokens()
	out := p.r.wf.file.OutputChannel()
	if v, ok := s.Value(out); ok {
		text, streamed := p.unstreamed(strings.TrimSpace(render(v)))
		if text != "" {
			fmt.Fprintf(p.w, "\n%s\n", text)
		}
		switch {
		case streamed && text != "":
			fmt.Fprintf(p.w, "\n(the %s is the text streamed above, with what follows it)\n", out)
		case streamed:
			fmt.Fprintf(p.w, "\n(the %s is the text streamed above)\n", out)
		}
	} else {
		fmt.Fprintf(p.w, "\n(the run wrote nothing to %s)\n", out)
	}
	fmt.Fprintf(p.w, "\nusage: %s\n", p.r.used.Spent())
	fmt.Fprintf(p.w, "thread %s saved in %s · coorflow threads show %s\n", p.r.thread, p.r.db.where, p.r.thread)
	if p.r.runID != "" {
		fmt.Fprintf(p.w, "run %s recorded · coorflow runs show %s · coorflow replay %s\n", p.r.runID, p.r.runID, p.r.runID)
	}
}

func (p *textPrinter) failed(err error, cancelled bool) {
	p.flush()
	p.endTokens()
	fmt.Fprintf(p.w, "\nusage: %s\n", p.r.used.Spent())
	if cancelled {
		p.r.app.notice("the thread keeps every finished step; continue with: coorflow run %s --thread %s", shellQuote(p.r.wf.arg), p.r.thread)
	}
}

// render shows a channel value: text as it is, anything else as JSON.
func render(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// describeQuestion renders an interrupt's payload for a person.
func describeQuestion(q graph.InterruptInfo) string {
	var b strings.Builder
	var payload map[string]any
	if raw, err := json.Marshal(q.Payload); err == nil {
		_ = json.Unmarshal(raw, &payload)
	}
	if pl, ok := payload["plan"].(map[string]any); ok {
		fmt.Fprintf(&b, "Plan: %v\n", pl["title"])
		if agents, ok := pl["new_agents_needed"].([]any); ok {
			for _, a := range agents {
				if m, ok := a.(map[string]any); ok {
					fmt.Fprintf(&b, "  new agent %v: %v\n", m["name"], m["role"])
				}
			}
		}
		if steps, ok := pl["steps"].([]any); ok {
			for _, s := range steps {
				if m, ok := s.(map[string]any); ok {
					fmt.Fprintf(&b, "  %v  %v  %v\n", m["id"], m["agent_name"], m["title"])
				}
			}
		}
		if probs, ok := payload["problems"].([]any); ok {
			for _, pr := range probs {
				fmt.Fprintf(&b, "  problem: %v\n", pr)
			}
		}
	}
	switch question, _ := payload["question"].(string); {
	case question != "" && payload["agent"] != nil:
		fmt.Fprintf(&b, "%v asks: %s\n", agentOf(fmt.Sprint(payload["agent"])), question)
	case question != "":
		fmt.Fprintln(&b, question)
	default:
		fmt.Fprintf(&b, "%s asks: %s\n", q.Node, render(q.Payload))
	}
	fmt.Fprintf(&b, "(question %s)\n", q.ID)
	return b.String()
}

// isAgentPath reports whether path is below a node (an agent, a step).
func isAgentPath(path string) bool {
	return strings.Contains(path, "/agent:") || strings.Contains(path, "/step:") || strings.Contains(path, "/build:")
}

// nodeLabel names a node event's task: the node, and its packet index.
func nodeLabel(ev graph.Event) string {
	return ev.Path[strings.LastIndexByte(ev.Path, '/')+1:]
}

// agentOf returns the agent named in a path, or its last segment.
func agentOf(path string) string {
	segs := strings.Split(path, "/")
	for i := len(segs) - 1; i >= 0; i-- {
		if name, ok := strings.CutPrefix(segs[i], "agent:"); ok {
			return name
		}
	}
	return segs[len(segs)-1]
}

// runLabel names one run of an agent: its step and name.
func runLabel(agent, run string) string {
	if run == "" {
		return agent
	}
	return run + " " + agent
}

// answerSummary shows a step's JSON answer as its confidence and summary.
func answerSummary(out string) string {
	var ans struct {
		Summary    string   `json:"summary"`
		Confidence *float64 `json:"confidence"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &ans); err == nil && ans.Summary != "" {
		if ans.Confidence != nil {
			return fmt.Sprintf("(%.2f) %s", *ans.Confidence, oneLine(ans.Summary, 110))
		}
		return oneLine(ans.Summary, 110)
	}
	return oneLine(out, 110)
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// oneLine collapses s to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
