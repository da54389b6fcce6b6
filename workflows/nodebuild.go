package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/structured"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/window"
)

// addNode builds node n and adds it to g.
func (b *build) addNode(ctx context.Context, g *graph.Graph, n *fileNode) error {
	opts := nodeOptions(n)
	if dests := n.destinations(); len(dests) > 0 {
		opts = append(opts, graph.Destinations(graphNames(dests)...))
	}
	if n.Spec.Type == "subgraph" {
		sub, err := b.subgraph(ctx, n.sub)
		if err != nil {
			return err
		}
		g.AddSubgraph(n.Name, sub, opts...)
		return nil
	}
	fn, err := b.nodeFunc(n)
	if err != nil {
		return fmt.Errorf("workflows: %s: node %q: %w", b.f.path, n.Name, err)
	}
	g.AddNode(n.Name, b.withEmit(n, b.withDelay(n, b.withSet(n, b.checked(n.Name, fn)))), opts...)
	return nil
}

// subgraph compiles the file of a subgraph node, once per Compile.
func (b *build) subgraph(ctx context.Context, f *File) (*graph.Runnable, error) {
	if r, ok := b.subs[f]; ok {
		return r, nil
	}
	env := b.env
	env.Graph = nil // the parent's saver reaches the subgraph through the run
	r, err := f.compile(ctx, env, b.subs)
	if err != nil {
		return nil, err
	}
	b.subs[f] = r
	return r, nil
}

// nodeFunc builds n as its node type (nodeKinds) says.
func (b *build) nodeFunc(n *fileNode) (graph.NodeFunc, error) {
	k, ok := nodeKinds[n.Spec.Type]
	if !ok || k.build == nil {
		return nil, fmt.Errorf("unknown node type %q", n.Spec.Type)
	}
	return k.build(b, n)
}

func (b *build) coordinator(n *fileNode) (graph.NodeFunc, error) {
	m, info, err := b.model(n)
	if err != nil {
		return nil, err
	}
	return nodes.Coordinator(nodes.CoordinatorConfig{Model: m, Info: info, Next: n.Spec.Next})
}

func (b *build) planner(n *fileNode) (graph.NodeFunc, error) {
	s, set := n.Spec, b.f.spec.Settings
	m, info, err := b.model(n)
	if err != nil {
		return nil, err
	}
	return nodes.Planner(nodes.PlannerConfig{
		Model: m, Info: info, Agents: b.agents(s.NewAgents), AllowNewAgents: s.NewAgents,
		MaxSteps: set.MaxSteps, MaxIterations: set.MaxIterations, Review: s.Review, Reporter: s.Reporter,
		Recall: b.recall(),
	})
}

func (b *build) humanReview(n *fileNode) (graph.NodeFunc, error) {
	s, set := n.Spec, b.f.spec.Settings
	auto := set.AutoAccept
	if s.AutoAccept != nil {
		auto = *s.AutoAccept
	}
	auto = auto || b.env.AutoAccept
	dynamic := b.f.byNode[s.Replan].Spec.NewAgents
	return nodes.HumanReview(nodes.ReviewConfig{
		AutoAccept: auto, Next: s.Next, Replan: s.Replan,
		Agents: b.agents(dynamic), AllowNewAgents: dynamic, MaxSteps: set.MaxSteps,
	})
}

func (b *build) reporter(n *fileNode) (graph.NodeFunc, error) {
	m, info, err := b.model(n)
	if err != nil {
		return nil, err
	}
	return nodes.Reporter(nodes.ReporterConfig{Model: m, Info: info, Read: factory.OutputReader(b.env.Store, b.env.Owner)})
}

func (b *build) backgroundInvestigator(n *fileNode) (graph.NodeFunc, error) {
	var search tools.Tool
	if t, err := b.tools.Get("web_search"); err == nil {
		search = t
	}
	return nodes.BackgroundInvestigator(nodes.BackgroundConfig{Search: search, Next: n.Spec.Next})
}

func (b *build) researchTeam(n *fileNode) (graph.NodeFunc, error) {
	workers := map[string]string{}
	for _, w := range n.Spec.Workers {
		workers[b.f.byNode[w].Spec.Agent] = w
	}
	return nodes.ResearchTeam(workers, n.Spec.Planner), nil
}

func (b *build) router(n *fileNode) (graph.NodeFunc, error) {
	routes, sc := n.routes, b.f.scope
	return func(ctx context.Context, st graph.State) (graph.Command, error) {
		r, err := pick(ctx, sc, routes, st)
		if err != nil {
			return graph.Command{}, err
		}
		cmd := graph.Goto(graphName(r.to))
		if cmd.Update, err = b.setWrites(ctx, n.Name, r.set, st); err != nil {
			return graph.Command{}, err
		}
		return cmd, nil
	}, nil
}

func (b *build) interrupt(n *fileNode) (graph.NodeFunc, error) {
	return b.interruptNode(n), nil
}

func (b *build) goNode(n *fileNode) (graph.NodeFunc, error) {
	fn, ok := b.f.opts.funcs[n.Spec.Func]
	if !ok && b.env.Offline {
		return standIn("go function " + n.Spec.Func), nil
	}
	if !ok {
		return nil, fmt.Errorf("go function %q is not registered: a file with go nodes runs in a Go program that registers its functions (workflows.WithFuncs)", n.Spec.Func)
	}
	return fn, nil
}

// agents is the directory plans name agents from: the registry when new
// agents may be built; otherwise the agents of the file's worker nodes,
// or the predefined roles when it has none.
func (b *build) agents(dynamic bool) nodes.AgentDirectory {
	if dynamic {
		return b.reg
	}
	var cards nodes.StaticAgents
	for _, n := range b.f.nodes {
		if n.Spec.Type != "worker" {
			continue
		}
		card := nodes.AgentCard{Name: n.Spec.Agent, Description: n.Spec.Description}
		for _, d := range nodes.DefaultAgents {
			if d.Name == card.Name && card.Description == "" {
				card.Description = d.Description
			}
		}
		cards = append(cards, card)
	}
	if len(cards) == 0 {
		return nodes.DefaultAgents
	}
	return cards
}

func (b *build) team(n *fileNode) (graph.NodeFunc, error) {
	m, info, err := b.model(n)
	if err != nil {
		return nil, err
	}
	set := b.f.spec.Settings
	wc, windowed := b.f.nodeContext(n)
	cfg := factory.TeamConfig{
		Registry: b.reg, Models: b.env.Models, Tools: b.tools, Store: b.env.Store,
		BuildConcurrency: set.BuildConcurrency, StepConcurrency: set.StepConcurrency,
		Threshold: set.ConfidenceThreshold, FailFast: set.FailFast, MaxTurns: set.MaxTurns,
		Window: wc, NoWindow: !windowed, Skills: b.f.skills, Memories: b.teamMemories(),
	}
	if ft := n.team; ft != nil {
		cfg.Agents = slices.Clone(ft.agents)
		for i := range cfg.Agents {
			cfg.Agents[i].Tools = b.expandTools(cfg.Agents[i].Tools)
		}
		if ft.plan != nil {
			// A fixed plan declares no new agents: nothing to build.
			cfg.Plan = b.f.fixedPlan(ft)
			return factory.Team(cfg)
		}
	}
	exp, err := b.expander(m, info)
	if err != nil {
		return nil, err
	}
	cfg.Builder = &factory.Builder{Model: m, Info: info, Tools: b.tools, Skills: b.f.skills, WritePrompt: factory.ExpandWith(exp, b.tools)}
	return factory.Team(cfg)
}

func (b *build) worker(n *fileNode) (graph.NodeFunc, error) {
	s := n.Spec
	a, _ := defaultAgent(s.Agent)
	a.Name = s.Agent
	if s.System != "" {
		a.Prompt = s.System
	}
	if s.Tools != nil {
		a.Tools = s.Tools
	}
	m, info, err := b.model(n)
	if err != nil {
		return nil, err
	}
	reg, _ := b.tools.Subset(b.expandTools(a.Tools)...)
	prompt, err := b.f.skillsOf(s.Skills).Equip(a.Prompt, reg)
	if err != nil {
		return nil, err
	}
	base := react.Config{Name: a.Name, Model: m, Info: info, SystemPrompt: prompt, Tools: reg, MaxTurns: b.f.spec.Settings.MaxTurns}
	if _, err := react.New(base); err != nil {
		return nil, err
	}
	// The agent is made for each run: its window offloads to the run's
	// thread.
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		cfg := base
		if err := b.reactWindow(ctx, n, &cfg); err != nil {
			return graph.Command{}, err
		}
		agent, err := react.New(cfg)
		if err != nil {
			return graph.Command{}, err
		}
		node, err := nodes.Worker(nodes.WorkerConfig{Agent: agent, Threshold: b.f.spec.Settings.ConfidenceThreshold})
		if err != nil {
			return graph.Command{}, err
		}
		return node(ctx, s)
	}, nil
}

// render renders a node's system prompt and prompt from the state.
func (b *build) render(ctx context.Context, n *fileNode, s graph.State) (sys, prompt string, err error) {
	if sys, err = n.system.render(ctx, b.f.scope, s); err != nil {
		return "", "", fmt.Errorf("workflows: node %q: system prompt: %w", n.Name, err)
	}
	if prompt, err = n.prompt.render(ctx, b.f.scope, s); err != nil {
		return "", "", fmt.Errorf("workflows: node %q: prompt: %w", n.Name, err)
	}
	return sys, prompt, nil
}

// textOutput reports whether a channel takes a model's text as it is.
func textOutput(c *channel) bool { return c.shape.kind == "string" || c.shape.kind == "any" }

func (b *build) llmNode(n *fileNode) (graph.NodeFunc, error) {
	m, info, err := b.model(n)
	if err != nil {
		return nil, err
	}
	model := window.Observe(llm.Observe(m, info))
	out := n.output
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		sys, prompt, err := b.render(ctx, n, s)
		if err != nil {
			return graph.Command{}, err
		}
		var msgs []llms.MessageContent
		if sys != "" {
			msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeSystem, sys))
		}
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, prompt))
		ctx = llm.WithAgent(ctx, n.Name)
		var v any
		if scalar := scalarKinds[out.shape.kind]; scalar != "" {
			msgs[len(msgs)-1] = llms.TextParts(llms.ChatMessageTypeHuman, prompt+"\n\nAnswer with "+scalar+" and nothing else.")
		}
		if textOutput(out) || scalarKinds[out.shape.kind] != "" {
			resp, err := model.GenerateContent(ctx, msgs)
			if err != nil {
				return graph.Command{}, fmt.Errorf("workflows: node %q: %w", n.Name, err)
			}
			if len(resp.Choices) == 0 {
				return graph.Command{}, errNoReply
			}
			if v, err = outputValue(out, resp.Choices[0].Content); err != nil {
				return graph.Command{}, fmt.Errorf("workflows: node %q: %w", n.Name, err)
			}
		} else {
			var opts []structured.Option
			if out.schemaJSON != nil {
				opts = append(opts, structured.WithSchema(out.schemaJSON))
			}
			if v, err = structured.Generate[any](ctx, model, msgs, opts...); err != nil {
				return graph.Command{}, fmt.Errorf("workflows: node %q: %w", n.Name, err)
			}
		}
		w, err := b.write(n.Name, out, v)
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(w), nil
	}, nil
}

func (b *build) reactNode(n *fileNode) (graph.NodeFunc, error) {
	m, info, err := b.model(n)
	if err != nil {
		return nil, err
	}
	reg, _ := b.tools.Subset(b.expandTools(n.Spec.Tools)...)
	equipped := b.f.skillsOf(n.Spec.Skills)
	if _, err := equipped.Equip("", reg); err != nil {
		return nil, err
	}
	out := n.output
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		sys, prompt, err := b.render(ctx, n, s)
		if err != nil {
			return graph.Command{}, err
		}
		sys = equipped.Prompt(sys)
		cfg := react.Config{Name: n.Name, Model: m, Info: info, SystemPrompt: sys, Tools: reg, MaxTurns: n.Spec.MaxTurns}
		if err := b.reactWindow(ctx, n, &cfg); err != nil {
			return graph.Command{}, err
		}
		agent, err := react.New(cfg)
		if err != nil {
			return graph.Command{}, err
		}
		res, err := agent.Run(ctx, react.Task{Input: prompt})
		if err != nil {
			return graph.Command{}, err
		}
		v, err := outputValue(out, llm.StripThink(res.Output))
		if err != nil {
			return graph.Command{}, fmt.Errorf("workflows: node %q: %w", n.Name, err)
		}
		w, err := b.write(n.Name, out, v)
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(w), nil
	}, nil
}

// outputValue reads text as the value of channel c: as it is for a text
// channel, as the JSON in it otherwise.
func outputValue(c *channel, text string) (any, error) {
	text = llm.StripThink(text)
	if textOutput(c) {
		return text, nil
	}
	if scalarKinds[c.shape.kind] != "" {
		return scalarValue(c, text)
	}
	raw, err := structured.ExtractJSON(text)
	if err != nil {
		return nil, fmt.Errorf("the output for channel %q is not JSON: %w", c.name, err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("the output for channel %q is not JSON: %w", c.name, err)
	}
	return v, nil
}

func (b *build) toolNode(n *fileNode) (graph.NodeFunc, error) {
	reg, sc, out := b.tools, b.f.scope, n.output
	name := n.Spec.Tool
	if _, err := reg.Get(name); err != nil {
		return nil, fmt.Errorf("tool %q is not available (an optional tool left out?): %w", name, err)
	}
	caller := tools.Observe(reg)
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		args := map[string]any{}
		for _, a := range n.args {
			v, err := sc.eval(ctx, a.prog, s)
			if err != nil {
				return graph.Command{}, fmt.Errorf("workflows: node %q: argument %s: %w", n.Name, a.name, err)
			}
			args[a.name] = v
		}
		raw, err := json.Marshal(args)
		if err != nil {
			return graph.Command{}, fmt.Errorf("workflows: node %q: arguments: %w", n.Name, err)
		}
		res, err := caller.Run(ctx, tools.Call{Name: name, Args: raw}, tools.RunOptions{})
		if err != nil {
			return graph.Command{}, fmt.Errorf("workflows: node %q: tool %s: %w", n.Name, name, err)
		}
		if res.Status == tools.StatusFailed {
			return graph.Command{}, fmt.Errorf("workflows: node %q: tool %s failed: %s", n.Name, name, res.Text())
		}
		if out == nil {
			return graph.Command{}, nil
		}
		v, err := toolValue(out, res.Text())
		if err != nil {
			return graph.Command{}, fmt.Errorf("workflows: node %q: tool %s: %w", n.Name, name, err)
		}
		w, err := b.write(n.Name, out, v)
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(w), nil
	}, nil
}

// toolValue reads a tool's text as the value of channel c. A tool is a
// program, not a model: a number or a boolean is the whole text (spaces
// aside), never the first number found in it.
func toolValue(c *channel, text string) (any, error) {
	if scalarKinds[c.shape.kind] == "" {
		return outputValue(c, text)
	}
	t := strings.TrimSpace(text)
	switch c.shape.kind {
	case "boolean":
		if b, err := strconv.ParseBool(t); err == nil {
			return b, nil
		}
	default:
		f, err := strconv.ParseFloat(t, 64)
		if err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) && (c.shape.kind == "number" || f == math.Trunc(f)) {
			return f, nil
		}
	}
	return nil, fmt.Errorf("the output for channel %q is not %s: %q", c.name, scalarKinds[c.shape.kind], oneLine(text))
}

// scalarKinds are the channel types a model answers with one value, and
// how it is asked for.
var scalarKinds = map[string]string{"number": "a number", "integer": "a whole number", "boolean": "true or false"}

var numberInText = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?`)

// scalarValue reads a number or a boolean from a model's answer.
func scalarValue(c *channel, text string) (any, error) {
	t := strings.Trim(strings.TrimSpace(text), "`*. ")
	switch c.shape.kind {
	case "boolean":
		switch strings.ToLower(t) {
		case "true", "yes":
			return true, nil
		case "false", "no":
			return false, nil
		}
	default:
		if m := numberInText.FindString(t); m != "" {
			f, err := strconv.ParseFloat(m, 64)
			if err == nil && (c.shape.kind == "number" || f == float64(int64(f))) {
				return f, nil
			}
		}
	}
	return nil, fmt.Errorf("the output for channel %q is not %s: %q", c.name, scalarKinds[c.shape.kind], oneLine(text))
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}

// errOffline is what a stand-in returns: the graph was compiled to be
// read or drawn, not run.
var errOffline = errors.New("workflows: compiled offline (Env.Offline): it cannot run")

func standIn(what string) graph.NodeFunc {
	return func(context.Context, graph.State) (graph.Command, error) {
		return graph.Command{}, fmt.Errorf("%w: %s", errOffline, what)
	}
}
