package workflows

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/nodes/plan"
)

// Production is what Export fixes in a workflow: the plan that a run of a
// dynamic workflow made and the agents that ran its steps — CoorAgent's
// production mode, where a plan that worked runs again on new input
// without the coordinator, the planner and the agent builder.
type Production struct {
	// Name and Description are the exported workflow's.
	Name, Description string
	// Comment opens the file, as comment lines.
	Comment string
	// Plan is the plan to fix. Results and NewAgentsNeeded are left out:
	// Agents carries the agents.
	Plan *plan.Plan
	// Agents are written out under the team node, in this order: every
	// agent a step names, unless it is built in (researcher, coder,
	// reporter), which the team then takes from the registry.
	Agents []factory.Agent
	// Request holds the texts of the original request, such as the run's
	// input and the coordinator's hand-off. Where one appears in a step's
	// title, description or note, or in the plan's title, the placeholder
	// {{ state.request }} takes its place; a step whose description then
	// has no placeholder gets a closing "# Request" section with it, so
	// that every step works on the new input.
	Request []string
	// Demo is the demo script the file names, relative to the file; ""
	// names none.
	Demo string
}

// RequestPlaceholder is where an exported workflow's steps read the new
// input: the file's input channel is request.
const RequestPlaceholder = "{{ state.request }}"

// exportedSettings are the settings that concern the team and the run,
// kept by Export; the others concern the planner, the review and the
// builder, which an exported workflow does not have.
var exportedSettings = []string{"step_limit", "max_concurrency", "max_turns", "confidence_threshold", "step_concurrency", "fail_fast", "context"}

// Export writes a workflow file (coorflow/v1) that runs p without a
// planner: start → team → reporter → end. The team node holds the fixed
// plan and the agents written out (its plan and agents sections); the
// file's input channel is request, which the reporter and the steps read.
// It keeps f's models, the tools the agents use and the settings that
// concern the team. The result is checked as Load checks a file, with
// path (where it will be written) naming it, so it can be edited by hand
// and loaded back.
func (f *File) Export(path string, p Production) ([]byte, error) {
	if p.Plan == nil || len(p.Plan.Steps) == 0 {
		return nil, errors.New("workflows: export: the plan has no steps")
	}
	root := yamlMap()
	if p.Comment != "" {
		root.HeadComment = commentLines(p.Comment)
	}
	yamlKey(root, "apiVersion", yamlString("coorflow/v1"))
	yamlKey(root, "name", yamlString(p.Name))
	if p.Description != "" {
		yamlKey(root, "description", yamlText(p.Description))
	}
	in := yamlKey(root, "input", yamlString("request"))
	in.LineComment = "coorflow run --input writes the request; steps read it as " + RequestPlaceholder
	f.copySection(root, "models", nil)
	if p.Demo != "" {
		demo := yamlMap()
		yamlKey(demo, "script", yamlString(p.Demo))
		yamlKey(root, "demo", demo)
	}
	f.exportTools(root, usedTools(p.Agents))
	f.copySection(root, "settings", exportedSettings)

	team := yamlMap()
	yamlKey(team, "type", yamlString("team"))
	yamlKey(team, "plan", planNode(p.Plan, requestTexts(p.Request)))
	if agents := agentsNode(p.Agents); agents != nil {
		yamlKey(team, "agents", agents)
	}
	reporter := yamlMap()
	yamlKey(reporter, "type", yamlString("reporter"))
	ns := yamlMap()
	yamlKey(ns, "team", team)
	yamlKey(ns, "reporter", reporter)
	yamlKey(root, "nodes", ns)
	edges := &yaml.Node{Kind: yaml.SequenceNode}
	for _, e := range [][2]string{{startName, "team"}, {"team", "reporter"}, {"reporter", endName}} {
		m := yamlMap()
		m.Style = yaml.FlowStyle
		yamlKey(m, "from", yamlString(e[0]))
		yamlKey(m, "to", yamlString(e[1]))
		edges.Content = append(edges.Content, m)
	}
	yamlKey(root, "edges", edges)

	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return nil, fmt.Errorf("workflows: export: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("workflows: export: %w", err)
	}
	if _, err := Parse(path, b.Bytes(), f.opts.loadOptions()...); err != nil {
		return nil, fmt.Errorf("workflows: export: the exported file does not load: %w", err)
	}
	return b.Bytes(), nil
}

// loadOptions are the options that loaded a file, for loading another
// file in the same program.
func (o loadOptions) loadOptions() []LoadOption {
	var out []LoadOption
	if o.funcs != nil {
		out = append(out, WithFuncs(o.funcs))
	}
	if o.tools != nil {
		out = append(out, WithTools(o.tools))
	}
	if o.unregistered {
		out = append(out, WithUnregistered())
	}
	for _, dir := range o.roots {
		out = append(out, WithIncludeRoot(dir))
	}
	return append(out, WithAllowedEnv(o.allowEnv...))
}

// copySection copies f's top-level section key to root, comments
// included; with keep, only the entries keep names.
func (f *File) copySection(root *yaml.Node, key string, keep []string) {
	for i := 0; i+1 < len(f.doc.root.Content); i += 2 {
		if f.doc.root.Content[i].Value != key {
			continue
		}
		val := f.doc.root.Content[i+1]
		if keep != nil && val.Kind == yaml.MappingNode {
			out := yamlMap()
			for j := 0; j+1 < len(val.Content); j += 2 {
				if slices.Contains(keep, val.Content[j].Value) {
					out.Content = append(out.Content, val.Content[j], val.Content[j+1])
				}
			}
			if len(out.Content) == 0 {
				return
			}
			val = out
		}
		yamlKey(root, key, val)
		return
	}
}

// exportTools declares the tools the agents use: as f declares them, or
// with the defaults of built-in tools. A tool written in Go that f does
// not declare is left out; loading the result names it.
func (f *File) exportTools(root *yaml.Node, used []string) {
	if f.usesMCP(used) {
		used = append(slices.Clone(used), mcpKey) // the servers of the MCP tools
	}
	f.copySection(root, "tools", used)
	var tools *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "tools" {
			tools = root.Content[i+1]
		}
	}
	for _, name := range used {
		b, builtin := lookupBuiltinTool(name)
		if _, declared := f.tools[name]; declared || !builtin || b.exportAs == "" {
			continue
		}
		var doc yaml.Node
		if yaml.Unmarshal([]byte(b.exportAs), &doc) != nil {
			continue
		}
		if tools == nil {
			tools = yamlMap()
			yamlKey(root, "tools", tools)
		}
		v := doc.Content[0]
		v.Style = yaml.FlowStyle
		yamlKey(tools, name, v)
	}
}

// usedTools are the tools the agents name, or an empty list.
func usedTools(agents []factory.Agent) []string {
	out := []string{}
	for _, a := range agents {
		for _, t := range a.Tools {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

func planNode(p *plan.Plan, request []string) *yaml.Node {
	plan := yamlMap()
	yamlKey(plan, "title", yamlText(templateOf(p.Title, request)))
	if p.Thought != "" {
		yamlKey(plan, "thought", yamlText(p.Thought))
	}
	if p.Locale != "" {
		yamlKey(plan, "locale", yamlString(p.Locale))
	}
	steps := &yaml.Node{Kind: yaml.SequenceNode}
	for _, s := range p.Steps {
		step := yamlMap()
		yamlKey(step, "id", yamlString(s.ID))
		yamlKey(step, "agent_name", yamlString(s.AgentName))
		yamlKey(step, "title", yamlText(templateOf(s.Title, request)))
		desc := templateOf(s.Description, request)
		if !strings.Contains(desc, RequestPlaceholder) {
			desc = strings.TrimRight(desc, "\n") + "\n\n# Request\n" + RequestPlaceholder
		}
		yamlKey(step, "description", yamlText(desc))
		if s.Note != "" {
			yamlKey(step, "note", yamlText(templateOf(s.Note, request)))
		}
		if s.StepType != "" {
			yamlKey(step, "step_type", yamlString(s.StepType))
		}
		if s.NeedSearch {
			yamlKey(step, "need_search", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
		}
		if len(s.DependsOn) > 0 {
			deps := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, d := range s.DependsOn {
				deps.Content = append(deps.Content, yamlString(d))
			}
			yamlKey(step, "depends_on", deps)
		}
		steps.Content = append(steps.Content, step)
	}
	yamlKey(plan, "steps", steps)
	return plan
}

func agentsNode(agents []factory.Agent) *yaml.Node {
	if len(agents) == 0 {
		return nil
	}
	out := yamlMap()
	for _, a := range agents {
		m := yamlMap()
		if a.Role != "" {
			yamlKey(m, "role", yamlText(a.Role))
		}
		if a.Description != "" {
			yamlKey(m, "description", yamlText(a.Description))
		}
		if a.Tier != "" {
			yamlKey(m, "tier", yamlString(a.Tier))
		}
		if len(a.Tools) > 0 {
			ts := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, t := range a.Tools {
				ts.Content = append(ts.Content, yamlString(t))
			}
			yamlKey(m, "tools", ts)
		}
		yamlKey(m, "system", yamlText(a.Prompt))
		yamlKey(out, a.Name, m)
	}
	return out
}

// requestTexts are the texts of the request to replace, longest first.
func requestTexts(request []string) []string {
	var out []string
	for _, r := range request {
		if r = strings.TrimSpace(r); r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// templateOf returns s as a template: every occurrence of a request text
// becomes the request placeholder, and the rest stays literal.
func templateOf(s string, request []string) string {
	var b, lit strings.Builder
	flush := func() {
		b.WriteString(escapeTemplate(lit.String()))
		lit.Reset()
	}
	for i := 0; i < len(s); {
		found := ""
		for _, r := range request {
			if strings.HasPrefix(s[i:], r) {
				found = r
				break
			}
		}
		if found == "" {
			lit.WriteByte(s[i])
			i++
			continue
		}
		flush()
		b.WriteString(RequestPlaceholder)
		i += len(found)
	}
	flush()
	return b.String()
}

// escapeTemplate keeps literal text literal in a template: an opening {{,
// or a { that a placeholder follows, becomes an expression that renders
// it.
func escapeTemplate(s string) string {
	s = strings.ReplaceAll(s, "{{", `{{ "{{" }}`)
	if strings.HasSuffix(s, "{") && !strings.HasSuffix(s, `{{ "{{" }}`) {
		s = s[:len(s)-1] + `{{ "{" }}`
	}
	return s
}

func yamlMap() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func yamlString(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
}

// yamlText is a string scalar, in block style when it has several lines.
func yamlText(v string) *yaml.Node {
	n := yamlString(v)
	if strings.Contains(strings.TrimRight(v, "\n"), "\n") {
		n.Style = yaml.LiteralStyle
	}
	return n
}

// yamlKey adds key: val to mapping m and returns the key's node.
func yamlKey(m *yaml.Node, key string, val *yaml.Node) *yaml.Node {
	k := yamlString(key)
	m.Content = append(m.Content, k, val)
	return k
}

func commentLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight("# "+l, " ")
	}
	return strings.Join(lines, "\n")
}
