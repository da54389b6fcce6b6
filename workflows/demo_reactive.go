package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"unicode"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
)

// ReactiveDemo is the demo model of a file that has no demo script: it
// plays the roles of the built-in nodes — coordinator, planner, agent
// builder, meta-prompt, the team's agents and the reporter — and builds
// each answer from what the call holds: the latest request, the review's
// feedback, the step an agent was given, the results the reporter reads.
// The same call gets the same answer, byte for byte, and nothing is kept
// between calls, so a thread continued in another process, a second
// request on a thread and a replanning round are answered like any
// other call.
//
// A call's role is the agent label the node gives it (llm.WithAgent:
// "coordinator", "planner", "builder:NAME", "metaprompt:NAME",
// "reporter"; any other label is an agent running a step); whether a
// planner may declare new agents comes from the file's node, found with
// graph.TaskOf. The text of a call is read by its Markdown headings
// ("Request", "feedback", "task"), with the first line of the last user
// message as the fallback. JSON answers are built from the same fields
// the nodes' schemas require; the nodes validate them as they would a
// provider's.
type ReactiveDemo struct {
	// newAgents holds the planner nodes that may declare new agents.
	newAgents map[string]bool
	maxSteps  int
}

var _ llms.Model = (*ReactiveDemo)(nil)

// ReactiveDemo returns the reactive demo model of the file, or nil when
// the file has nodes whose answers it cannot make up (llm and react
// nodes, which follow prompts of the file's own).
func (f *File) ReactiveDemo() *ReactiveDemo {
	d := &ReactiveDemo{newAgents: map[string]bool{}, maxSteps: f.spec.Settings.MaxSteps}
	for _, n := range f.allNodes() {
		switch n.Spec.Type {
		case "llm", "react":
			return nil
		case "planner":
			d.newAgents[n.Name] = n.Spec.NewAgents
		}
	}
	if d.maxSteps <= 0 {
		d.maxSteps = 3
	}
	return d
}

// Call answers a single prompt.
func (d *ReactiveDemo) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, d, prompt, opts...)
}

// GenerateContent answers the call as the role its agent label names,
// streaming and reporting usage as the scripted model does.
func (d *ReactiveDemo) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var co llms.CallOptions
	for _, o := range opts {
		o(&co)
	}
	call := scripted.Call{Agent: llm.AgentFrom(ctx), Messages: msgs, Options: co}
	reply := d.reply(ctx, call)
	return scripted.New(scripted.Script{Default: &reply}).GenerateContent(ctx, msgs, opts...)
}

// reply picks the role of a call and writes its answer.
func (d *ReactiveDemo) reply(ctx context.Context, c scripted.Call) scripted.Reply {
	switch label := c.Agent; {
	case label == "coordinator":
		return demoCoordinator(c)
	case label == "planner":
		info, _ := graph.TaskOf(ctx)
		return scripted.Reply{Text: d.plan(c, d.newAgents[info.Node])}
	case label == "reporter":
		return scripted.Reply{Text: demoReport(c)}
	case strings.HasPrefix(label, "builder:"):
		return scripted.Reply{Text: demoBuild(strings.TrimPrefix(label, "builder:"), c)}
	case strings.HasPrefix(label, "metaprompt:"):
		return scripted.Reply{Text: demoPrompt(strings.TrimPrefix(label, "metaprompt:"), c)}
	case label == "summarizer":
		return scripted.Reply{Text: "Summary of the earlier conversation: " + oneLineCut(lastUser(c.Messages), 300)}
	default:
		return demoAgent(c)
	}
}

// demoCoordinator hands the latest message to the planner, or answers a
// greeting itself.
func demoCoordinator(c scripted.Call) scripted.Reply {
	input := strings.TrimSpace(lastUser(c.Messages))
	if isGreeting(input) || !slices.Contains(c.ToolNames(), "handoff_to_planner") {
		return scripted.Reply{Text: "Hello! I am coorflow's offline demo model. Ask for something to research, " +
			"compare or compute, and the team will plan it, build the agents it needs and report."}
	}
	args, _ := json.Marshal(map[string]string{"task": topicOf(input), "locale": localeOf(input)})
	return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "handoff_to_planner", Arguments: string(args)}}}
}

// demoAgentSpec is a new agent of a demo plan, in the fields of
// plan.AgentSpec.
type demoAgentSpec struct {
	Name         string `json:"name"`
	Role         string `json:"role"`
	Capabilities string `json:"capabilities"`
	Contribution string `json:"contribution"`
}

// plan writes the plan of the request in the planner's call: a new plan,
// a revision that follows the review's feedback, or, once the steps have
// results, the decision that enough is known.
func (d *ReactiveDemo) plan(c scripted.Call, newAgents bool) string {
	user := lastUser(c.Messages)
	topic := topicOf(requestOf(user))
	feedback := oneLineCut(firstParagraph(section(user, isFeedbackHeading)), 300)
	locale := localeOf(topic)
	type step struct {
		ID          string   `json:"id"`
		AgentName   string   `json:"agent_name"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		StepType    string   `json:"step_type"`
		NeedSearch  bool     `json:"need_search"`
		DependsOn   []string `json:"depends_on"`
	}
	out := struct {
		Title            string          `json:"title"`
		Thought          string          `json:"thought"`
		Locale           string          `json:"locale"`
		HasEnoughContext bool            `json:"has_enough_context"`
		NewAgentsNeeded  []demoAgentSpec `json:"new_agents_needed"`
		Steps            []step          `json:"steps"`
	}{Title: capitalize(topic), Locale: locale, NewAgentsNeeded: []demoAgentSpec{}, Steps: []step{}}
	if feedback == "" && section(user, isResultsHeading) != "" {
		out.Thought = "The results of the steps answer the request; the reporter can write the report."
		out.HasEnoughContext = true
		return marshal(out)
	}
	known := availableAgents(c.Messages)
	slug := slugOf(topic)
	gather, weigh := "researcher", "coder"
	if newAgents {
		gather, weigh = slug+"_researcher", slug+"_analyst"
		for _, a := range []demoAgentSpec{
			{Name: gather, Role: "Researcher of " + topic, Capabilities: "Gathers the facts, figures and sources on " + topic,
				Contribution: "The facts the answer to \"" + topic + "\" rests on"},
			{Name: weigh, Role: "Analyst of " + topic, Capabilities: "Weighs options and trade-offs and checks numbers with python",
				Contribution: "The options for \"" + topic + "\" weighed against each other"},
		} {
			if !known[a.Name] { // an agent built in an earlier turn is reused
				out.NewAgentsNeeded = append(out.NewAgentsNeeded, a)
			}
		}
	} else {
		gather, weigh = pickKnown(known, gather), pickKnown(known, weigh)
	}
	out.Thought = fmt.Sprintf("The request is %q. One agent gathers the facts while another weighs the options, at the same time; the last step draws the conclusion from both.", topic)
	first := "Facts: " + topic
	if feedback != "" {
		out.Title += " (revised after review)"
		out.Thought = fmt.Sprintf("The reviewer asked: %q. The revised plan takes it into account. ", feedback) + out.Thought
		first = "Facts: " + topic + ", as the review asked: " + feedback
	}
	steps := []step{
		{ID: "s1", AgentName: gather, Title: oneLineCut(first, 200), StepType: "research",
			Description: "Collect what is known about " + topic + ": the main facts, figures and sources, and what is uncertain."},
		{ID: "s2", AgentName: weigh, Title: oneLineCut("Options weighed: "+topic, 200), StepType: "processing",
			Description: "List the options or positions on " + topic + " and weigh them against each other, with a small computation where it helps."},
		{ID: "s3", AgentName: gather, Title: oneLineCut("Conclusion: "+topic, 200), StepType: "processing", DependsOn: []string{"s1", "s2"},
			Description: "From the facts of s1 and the weighing of s2, answer the request \"" + topic + "\" in a few sentences."},
	}
	for i := range steps {
		if steps[i].DependsOn == nil {
			steps[i].DependsOn = []string{}
		}
		if feedback != "" {
			steps[i].Description += " The review asked: " + feedback
		}
	}
	if d.maxSteps < len(steps) {
		steps = steps[:d.maxSteps] // s1 and s2 depend on nothing
	}
	out.Steps = steps
	return marshal(out)
}

// demoBuild answers the agent builder: a description, a tier, tools from
// the list offered (never one that reaches the network on its own
// initiative — the demo's agents only run python) and a brief.
func demoBuild(name string, c scripted.Call) string {
	user := lastUser(c.Messages)
	role := fieldOf(user, "Role", humanize(name))
	contribution := fieldOf(user, "Contribution", role)
	toolList := availableAgents(c.Messages) // "- name: description" lines list the tools here
	var picked []string
	if toolList["python"] && strings.HasSuffix(name, "_analyst") {
		picked = append(picked, "python")
	}
	return marshal(struct {
		Thought     string   `json:"thought"`
		Description string   `json:"description"`
		Tier        string   `json:"tier"`
		Tools       []string `json:"tools"`
		Brief       string   `json:"brief"`
	}{
		Thought:     fmt.Sprintf("%s works from what the team already holds; python lets it check numbers offline.", name),
		Description: oneLineCut(role+".", 200),
		Tier:        "basic",
		Tools:       append([]string{}, picked...),
		Brief: fmt.Sprintf("You are the %s. Your task: %s. Reason about the request before concluding, "+
			"state what is uncertain, and deliver a short result in markdown with a one-sentence summary.", strings.ToLower(role), contribution),
	})
}

// demoPrompt answers the meta-prompt stage with a system prompt in the
// shape metaprompt.Check asks for.
func demoPrompt(name string, c scripted.Call) string {
	user := lastUser(c.Messages)
	role := fieldOf(user, "Role", humanize(name))
	contribution := fieldOf(user, "Expected contribution", fieldOf(user, "Contribution", role))
	return fmt.Sprintf(`You are the %s and deliver this to the team: %s.

# Steps
1. Read the task and restate what a complete answer holds.
2. Reason about what is known and what is missing before you write.
3. Use your tools only where they add something checkable.
4. Write the result, then a one-sentence summary.

# Output Format
Your reasoning first, then the result in markdown, then the summary and your confidence.

# Notes
- Say plainly what you could not verify.
- Stay on the request: %s.
`, strings.ToLower(strings.TrimSuffix(role, ".")), strings.TrimSuffix(contribution, "."), oneLineCut(contribution, 200))
}

// demoAgent answers a step: it runs python once when the step offers it,
// then gives the step's JSON answer built from the task.
func demoAgent(c scripted.Call) scripted.Reply {
	task := ""
	for _, m := range c.Messages {
		if m.Role == llms.ChatMessageTypeHuman {
			if ts := sections(messageText(m), isTaskHeading); len(ts) > 0 {
				task = ts[0] // the step's own task comes before what it builds on
				break
			}
		}
	}
	if task == "" {
		task = lastUser(c.Messages)
	}
	title, description, _ := strings.Cut(strings.TrimSpace(task), "\n")
	title, description = oneLineCut(title, 200), oneLineCut(description, 400)
	toolOut := lastToolResult(c.Messages)
	if toolOut == "" && slices.Contains(c.ToolNames(), "python") {
		code := fmt.Sprintf("title = %s\nwords = title.split()\nprint(len(words), 'words; longest:', max(words or [''], key=len))\n", pyString(title))
		args, _ := json.Marshal(map[string]string{"code": code})
		return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "python", Arguments: string(args)}}}
	}
	result := fmt.Sprintf("**%s**\n\n- Asked: %s", title, description)
	if toolOut != "" {
		result += "\n- The python tool printed: `" + oneLineCut(toolOut, 200) + "`"
	}
	result += "\n\n_An agent on a real model gives its findings here; the offline demo shows how the step flows through the team._"
	return scripted.Reply{Text: marshal(struct {
		Reasoning  string   `json:"reasoning"`
		Result     string   `json:"result"`
		Summary    string   `json:"summary"`
		Confidence float64  `json:"confidence"`
		Sources    []string `json:"sources"`
	}{
		Reasoning:  "The demo model answers from the task it was given, without research of its own.",
		Result:     result,
		Summary:    oneLineCut(title+": done by the offline demo model.", 240),
		Confidence: 0.9,
		Sources:    []string{},
	})}
}

// demoReport writes the report from the reporter's input: the request,
// the plan's title and each step's heading and list items.
func demoReport(c scripted.Call) string {
	user := lastUser(c.Messages)
	topic := topicOf(requestOf(user))
	title := oneLineCut(section(user, func(h string) bool { return strings.EqualFold(h, "plan") }), 200)
	if title == "" {
		title = capitalize(topic)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n**Your request:** %s\n\n", title, topic)
	b.WriteString("This report comes from coorflow's offline demo model: it shows how your request went through the " +
		"coordinator, the planner, the agents and the reporter. Configure a model provider (see the README) for real findings.\n")
	steps := stepsOf(user)
	if len(steps) > 0 {
		b.WriteString("\n## What the team did\n")
		for _, s := range steps {
			fmt.Fprintf(&b, "- **%s**\n", s[0])
			for _, item := range s[1:] {
				fmt.Fprintf(&b, "  - %s\n", item)
			}
		}
	}
	fmt.Fprintf(&b, "\n## Answer\nOn a real model, this section answers \"%s\" from the results above.", topic)
	return b.String()
}

// stepsOf returns the heading and the list items of each step section
// of the reporter's input ("## Step s1: …").
func stepsOf(text string) [][]string {
	var out [][]string
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		h, ok := heading(l)
		if !ok || !strings.HasPrefix(strings.ToLower(h), "step ") {
			continue
		}
		step := []string{oneLineCut(h, 200)}
		for _, next := range lines[i+1:] {
			if _, isH := heading(next); isH || len(step) > 4 {
				break
			}
			if item, ok := strings.CutPrefix(strings.TrimSpace(next), "- "); ok {
				step = append(step, oneLineCut(item, 240))
			}
		}
		out = append(out, step)
	}
	return out
}

// requestOf returns the request of a planner's or reporter's input: the
// last section headed "Request" (not an earlier turn's), or the first
// line of the text.
func requestOf(text string) string {
	if r := section(text, isRequestHeading); r != "" {
		return firstParagraph(r)
	}
	for _, l := range strings.Split(text, "\n") {
		if _, h := heading(l); !h && strings.TrimSpace(l) != "" {
			return l
		}
	}
	return text
}

func isRequestHeading(h string) bool {
	h = strings.ToLower(h)
	return strings.Contains(h, "request") && !isEarlier(h)
}

func isFeedbackHeading(h string) bool {
	h = strings.ToLower(h)
	return strings.Contains(h, "feedback") && !isEarlier(h)
}

func isResultsHeading(h string) bool {
	h = strings.ToLower(h)
	return strings.Contains(h, "results") && !isEarlier(h)
}

// isTaskHeading matches the heading of a step's own task ("Your task"),
// not that of a result it builds on ("Result of step s1, …, which your
// task builds on"), which may come first in an agent's window.
func isTaskHeading(h string) bool {
	h = strings.ToLower(h)
	return strings.Contains(h, "task") && !strings.Contains(h, "result")
}

// isEarlier reports whether a heading is about earlier turns.
func isEarlier(h string) bool {
	return strings.Contains(h, "previous") || strings.Contains(h, "earlier") || strings.Contains(h, "turn")
}

// section returns the body of the last Markdown section whose heading
// satisfies match, up to the next heading, trimmed.
func section(text string, match func(string) bool) string {
	bodies := sections(text, match)
	if len(bodies) == 0 {
		return ""
	}
	return bodies[len(bodies)-1]
}

// sections returns the non-empty bodies of the Markdown sections whose
// heading satisfies match, in order.
func sections(text string, match func(string) bool) []string {
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		h, ok := heading(lines[i])
		if !ok || !match(h) {
			continue
		}
		var body []string
		for i+1 < len(lines) {
			if _, next := heading(lines[i+1]); next {
				break
			}
			i++
			body = append(body, lines[i])
		}
		if b := strings.TrimSpace(strings.Join(body, "\n")); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// firstParagraph returns text up to its first blank line: what follows
// a section's first paragraph may be an instruction added to the message
// (structured output appends one to the last user message).
func firstParagraph(text string) string {
	p, _, _ := strings.Cut(strings.TrimSpace(text), "\n\n")
	return strings.TrimSpace(p)
}

// heading returns the text of a Markdown heading line.
func heading(line string) (string, bool) {
	t := strings.TrimLeft(line, "#")
	if len(t) == len(line) || len(line)-len(t) > 6 || !strings.HasPrefix(t, " ") {
		return "", false
	}
	return strings.TrimSpace(t), true
}

// fieldOf returns the value of a "Name: value" line, or fallback.
func fieldOf(text, name, fallback string) string {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			if v = strings.TrimSpace(v); v != "" && v != "(not given)" {
				return v
			}
		}
	}
	return fallback
}

// availableAgents returns the names listed as "- name: description" in
// the system messages of a call (the planner's agents, the builder's
// tools).
func availableAgents(msgs []llms.MessageContent) map[string]bool {
	names := map[string]bool{}
	for _, m := range msgs {
		if m.Role != llms.ChatMessageTypeSystem {
			continue
		}
		for _, l := range strings.Split(messageText(m), "\n") {
			name, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(l), "- "), ":")
			if ok && strings.HasPrefix(strings.TrimSpace(l), "- ") && isSnake(name) {
				names[name] = true
			}
		}
	}
	return names
}

// pickKnown returns want when it is an available agent, or else the
// first available one by name.
func pickKnown(known map[string]bool, want string) string {
	if known[want] || len(known) == 0 {
		return want
	}
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	slices.Sort(names)
	return names[0]
}

func isSnake(s string) bool {
	if s == "" || len(s) > 48 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// lastUser returns the text of the last user message.
func lastUser(msgs []llms.MessageContent) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llms.ChatMessageTypeHuman {
			return messageText(msgs[i])
		}
	}
	return ""
}

// lastToolResult returns the content of the last tool result, if the
// conversation ends with tool results.
func lastToolResult(msgs []llms.MessageContent) string {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != llms.ChatMessageTypeTool {
		return ""
	}
	for _, p := range msgs[len(msgs)-1].Parts {
		if r, ok := p.(llms.ToolCallResponse); ok {
			return r.Content
		}
	}
	return ""
}

// messageText joins the text parts of a message as paragraphs (an
// instruction added as a part of its own starts a paragraph).
func messageText(m llms.MessageContent) string {
	var texts []string
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}

// topicOf turns a request into a one-line topic of at most 120
// characters, cut at a word.
func topicOf(request string) string {
	t := strings.TrimRight(strings.Join(strings.Fields(request), " "), " .!?;:")
	if t == "" {
		return "your request"
	}
	return oneLineCut(t, 120)
}

// stopWords are left out of agent names: small words and the verbs
// requests start with.
var stopWords = map[string]bool{"a": true, "an": true, "and": true, "the": true, "of": true, "for": true, "to": true,
	"in": true, "on": true, "or": true, "vs": true, "versus": true, "with": true, "is": true, "are": true, "what": true,
	"how": true, "which": true, "why": true, "should": true, "i": true, "we": true, "my": true, "our": true, "me": true,
	"compare": true, "explain": true, "find": true, "tell": true, "about": true, "between": true, "do": true, "does": true,
	"can": true, "please": true, "it": true, "be": true, "as": true, "at": true, "by": true, "from": true, "use": true,
	"plan": true, "make": true, "write": true, "give": true, "list": true, "estimate": true, "help": true, "create": true,
	"describe": true, "show": true, "get": true, "need": true, "want": true, "summarize": true, "analyse": true,
	"analyze": true, "evaluate": true, "assess": true, "recommend": true, "choose": true, "pick": true,
	// the words a follow-up starts with ("Now add a section on …")
	"now": true, "add": true, "also": true, "then": true, "again": true, "more": true, "next": true, "too": true,
	"section": true, "part": true, "paragraph": true, "include": true, "expand": true, "extend": true, "each": true,
	"this": true, "that": true, "these": true, "those": true, "them": true, "their": true, "its": true, "same": true}

// slugOf makes the stem of agent names from a topic: its first two
// significant ASCII words, or a hash of the topic when it has none.
func slugOf(topic string) string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(topic), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		if !stopWords[w] && len(words) < 2 {
			words = append(words, w)
		}
	}
	slug := strings.Join(words, "_")
	if slug == "" || slug[0] < 'a' || slug[0] > 'z' {
		h := fnv.New32a()
		h.Write([]byte(topic))
		slug = fmt.Sprintf("topic_%08x", h.Sum32())
	}
	return oneLineCut(slug, 30)
}

// localeOf guesses a locale from the script of the text.
func localeOf(text string) string {
	for _, r := range text {
		switch {
		case unicode.Is(unicode.Han, r):
			return "zh-CN"
		case unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r):
			return "ja-JP"
		}
	}
	return "en-US"
}

func isGreeting(s string) bool {
	s = strings.ToLower(strings.Trim(strings.TrimSpace(s), "!.?"))
	switch s {
	case "hi", "hello", "hey", "thanks", "thank you", "good morning", "hallo", "你好":
		return true
	}
	return false
}

func capitalize(s string) string {
	for i, r := range s {
		return string(unicode.ToUpper(r)) + s[i+len(string(r)):]
	}
	return s
}

func humanize(name string) string { return capitalize(strings.ReplaceAll(name, "_", " ")) }

// oneLineCut puts s on one line of at most n runes, cut at a word when
// it can be.
func oneLineCut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n])
	if i := strings.LastIndex(cut, " "); i > n/2 {
		cut = cut[:i]
	}
	return cut + "…"
}

// pyString quotes s as a Python string literal.
func pyString(s string) string {
	b, _ := json.Marshal(s) // a JSON string is a valid Python literal
	return string(b)
}

// marshal encodes the demo's answers: structs of strings, numbers and
// slices, which always encode.
func marshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
