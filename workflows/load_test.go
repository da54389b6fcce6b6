package workflows_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/workflows"
)

// problemsOf loads a file that must be invalid and returns its problems
// as a user sees them, one per line.
func problemsOf(t *testing.T, path string, opts ...workflows.LoadOption) []string {
	t.Helper()
	_, err := workflows.Load(path, opts...)
	require.ErrorIs(t, err, workflows.ErrInvalidFile)
	var fe *workflows.FileError
	require.True(t, errors.As(err, &fe), "%v", err)
	var out []string
	for _, p := range fe.Problems {
		out = append(out, p.String())
	}
	return out
}

// TestEachBadFileIsReportedWithFileLineColumnKeyPathAndMessage loads every
// file of testdata/bad and compares the problems with what a user must
// see: "file:line:column: key.path: message", all of them at once.
func TestEachBadFileIsReportedWithFileLineColumnKeyPathAndMessage(t *testing.T) {
	cases := []struct {
		file string
		want []string // after "testdata/bad/<file>:"
	}{
		{"bad_channel_name.yaml", []string{
			"4:3: state.my-notes: channel name \"my-notes\" must start with a letter or _ and hold only letters, digits and _, so that expressions can read it as state.<name>",
		}},
		{"bad_duration.yaml", []string{
			"5:49: nodes.a.timeout: \"30 seconds\" must be a duration such as 30s, 2m or 1h30m",
		}},
		{"builtin_channel_redeclared.yaml", []string{
			"4:3: state.background: channel \"background\" is prebuilt for node type background_investigator, with type string and reducer last; this declaration says type integer and reducer last: match the prebuilt channel, or name yours otherwise",
		}},
		{"condition_on_undeclared_channel.yaml", []string{
			"8:21: nodes.a.routes[0].when: bad condition: unknown field count: the file declares no channel count (declare it under state)",
		}},
		{"condition_syntax_error.yaml", []string{
			"8:23: nodes.a.routes[0].when: bad condition: unexpected token EOF",
		}},
		{"condition_type_mismatch.yaml", []string{
			"8:27: nodes.a.routes[0].when: bad condition: invalid operation: > (mismatched types string and int)",
		}},
		{"cycle_with_no_exit.yaml", []string{
			"4:3: nodes.a: node \"a\" cannot reach end: every route from it loops (a -> b -> a); add an exit, such as a conditional edge to end",
			"5:3: nodes.b: node \"b\" cannot reach end: every route from it loops (b -> a -> b); add an exit, such as a conditional edge to end",
		}},
		{"every_problem_in_one_pass.yaml", []string{ // a schema problem, a set that writes the wrong type and a node with no way out
			"9:3: nodes.answer: missing required field \"output\"",
			"13:14: nodes.answer.set.count: \"\\\"three\\\"\" is text, but channel count takes a whole number",
			"14:3: nodes.polish: node \"polish\" has no way out: add an edge from it (to end if the run should stop there)",
			"18:5: nodes.polish.tools: unknown field \"tools\" (known fields: delay, description, emit, output, prompt, retry, set, system, tier, timeout, type)",
		}},
		{"demo_script_missing.yaml", []string{
			"3:16: demo.script: demo script nope.yaml cannot be read: no such file or directory",
		}},
		{"duplicate_node.yaml", []string{
			"6:3: nodes.a: node \"a\" is defined twice (first at line 5); names must be unique",
		}},
		{"edge_from_end_or_to_start.yaml", []string{
			"14:12: edges[2].from: no edge may leave end",
			"15:23: edges[3].to: no edge may lead to start",
		}},
		{"edge_to_missing_node.yaml", []string{
			"14:23: edges[2].to: unknown node \"wirte\" (the nodes are: write, end)",
		}},
		{"empty_file.yaml", []string{
			"1:1: the file is empty: a workflow starts with apiVersion: coorflow/v1",
		}},
		{"env_reference_outside_endpoints.yaml", []string{
			"5:26: nodes.a.prompt: ${...} is allowed only in endpoints and secrets (models.<tier>.base_url, tools.web_search.base_url, tools.web_search.api_key); write the value itself here",
		}},
		{"env_not_allowed.yaml", []string{
			"4:76: models.basic.base_url: ${AWS_SECRET_ACCESS_KEY} reads environment variable AWS_SECRET_ACCESS_KEY, " + notAllowed("AWS_SECRET_ACCESS_KEY"),
			"4:116: models.basic.api_key_env: api_key_env names environment variable AWS_SESSION_TOKEN, " + notAllowed("AWS_SESSION_TOKEN"),
			"6:44: tools.web_search.api_key: ${AWS_SECRET_ACCESS_KEY} reads environment variable AWS_SECRET_ACCESS_KEY, " + notAllowed("AWS_SECRET_ACCESS_KEY"),
			"6:82: tools.web_search.base_url: ${EVIL_URL:-https://evil.example} reads environment variable EVIL_URL, " + notAllowed("EVIL_URL"),
		}},
		{"file_is_a_list.yaml", []string{
			"1:1: a workflow file is a mapping of apiVersion, name, nodes, edges and the other sections, not a list",
		}},
		{"fixed_plan_cycle.yaml", []string{
			"8:7: nodes.team.plan.steps: depends_on has a cycle: a -> c -> b -> a; a step can only depend on steps that finish before it",
			"13:7: nodes.team.agents.Bad-Name: agent name \"Bad-Name\" must be snake_case: lowercase letters, digits and _ (at most 48), starting with a letter",
		}},
		{"fixed_team_problems.yaml", []string{
			"10:33: nodes.team.plan.title: bad expression in template: unknown field requst (did you mean \"request\"?)",
			"13:16: nodes.team.plan.steps[1].id: step id \"s1\" is used twice (first at steps[0])",
			"13:32: nodes.team.plan.steps[1].agent_name: step \"s1\" names agent \"anallyst\", which is neither under the node's agents nor built in (researcher, coder, reporter) (did you mean \"analyst\"?)",
			"14:95: nodes.team.plan.steps[2].depends_on[0]: step \"s3\" depends on \"s4\", which is not a step of the plan (did you mean \"s1\"?)",
			"14:99: nodes.team.plan.steps[2].depends_on[1]: step \"s3\" depends on itself",
			"18:29: nodes.team.agents.analyst.tools[1]: unknown tool \"python\" (declare it under tools; the file declares: http_fetch)",
		}},
		{"missing_required_field.yaml", []string{
			"4:3: nodes.a: missing required field \"output\"",
		}},
		{"models_without_basic_tier.yaml", []string{
			"3:1: models: the basic tier is missing: every models section needs basic, which the other tiers fall back to (and node \"write\" uses it)",
		}},
		{"no_edge_from_start.yaml", []string{
			"11:1: edges: no edge leaves start: add {from: start, to: write}",
		}},
		{"node_names_undeclared_tool.yaml", []string{
			"11:21: nodes.a.tools[1]: unknown tool \"web_serch\" (the file declares: python)",
		}},
		{"node_without_way_out.yaml", []string{
			"6:3: nodes.b: node \"b\" has no way out: add an edge from it (to end if the run should stop there)",
		}},
		{"prebuilt_channel_without_its_node.yaml", []string{
			"3:9: output: unknown channel \"answer\": the prebuilt channel answer is in a file's graph only with a node of type coordinator or reporter, " +
				"and this file has none: add one, or declare answer under state",
			"9:47: nodes.write.prompt: bad expression in template: unknown field request: the prebuilt channel request is in a file's graph only with a node of type " +
				"background_investigator, coordinator, planner or reporter, and this file has none: add one, or declare request under state",
			"10:77: nodes.fetch.output: unknown channel \"plan\": the prebuilt channel plan is in a file's graph only with a node of type " +
				"human_review, planner, reporter, research_team, team or worker, and this file has none: add one, or declare plan under state",
			"16:27: edges[2].branches[0].when: bad condition: unknown field findings: the prebuilt channel findings is in a file's graph only with a node of type " +
				"planner, reporter, team or worker, and this file has none: add one, or declare findings under state",
		}},
		{"replan_is_not_a_planner.yaml", []string{
			"6:44: nodes.r.replan: replan must name a planner node; \"c\" is a coordinator node",
		}},
		{"router_default_route_misplaced.yaml", []string{
			"7:9: nodes.a.routes[0]: only the last route may leave out when: the routes after it could never be taken",
			"8:9: nodes.a.routes[1].when: the last route must have no when: it is taken when no other route holds, so that the run always knows where to go",
		}},
		{"several_problems_at_once.yaml", []string{
			"6:11: nodes.a.tier: \"fast\" is not one of basic, reasoning, vision, code",
			"8:13: nodes.a.output: unknown channel \"s\" (declare it under state)",
			"9:5: nodes.a.extra: unknown field \"extra\" (known fields: delay, description, emit, output, prompt, retry, set, system, tier, timeout, type)",
		}},
		{"schema_and_semantic_problems.yaml", []string{
			"8:11: nodes.a.tier: \"fast\" is not one of basic, reasoning, vision, code",
			"11:5: nodes.a.tools: unknown field \"tools\" (known fields: delay, description, emit, output, prompt, retry, set, system, tier, timeout, type)",
			"12:25: nodes.b.tool: unknown tool \"shell\"",
			"15:19: edges[1].to: unknown node \"c\" (did you mean \"a\"?)",
		}},
		{"subgraph_file_missing.yaml", []string{
			"4:29: nodes.s.file: subgraph file other.yaml cannot be read: no such file or directory",
		}},
		{"template_not_closed.yaml", []string{
			"9:7: nodes.a.prompt: bad expression in template: {{ is not closed with }}",
		}},
		{"template_unknown_channel.yaml", []string{
			"9:20: nodes.a.prompt: bad expression in template: unknown field topic: the file declares no channel topic (declare it under state)",
		}},
		{"tool_argument_expression.yaml", []string{
			"8:36: nodes.a.args.code: bad expression: unknown field nope: the file declares no channel nope (declare it under state)",
		}},
		{"unknown_field_in_channel.yaml", []string{
			"4:7: state.n.tpye: unknown field \"tpye\" (known fields: additionalProperties, description, enum, format, items, maxItems, maxLength, maximum, minItems, minLength, minimum, pattern, properties, reducer, required, type)",
		}},
		{"unknown_model_provider.yaml", []string{
			"4:21: models.basic.provider: \"opnai\" is not one of openai, anthropic, ollama, googleai (did you mean \"openai\"?)",
		}},
		{"unknown_node_field.yaml", []string{
			"7:5: nodes.a.promt: unknown field \"promt\" (did you mean \"prompt\"?)",
		}},
		{"unknown_node_type.yaml", []string{
			"5:11: nodes.a.type: \"lmm\" is not one of llm, react, coordinator, planner, human_review, team, reporter, router, tool, subgraph, go, interrupt, background_investigator, research_team, worker (did you mean \"llm\"?)",
		}},
		{"unknown_output_channel.yaml", []string{
			"4:37: nodes.a.output: unknown channel \"sumary\" (did you mean \"summary\"?)",
		}},
		{"unknown_reducer.yaml", []string{
			"4:30: state.n.reducer: \"max\" is not one of last, append, messages, merge, sum",
		}},
		{"unknown_tool_in_tools.yaml", []string{
			"4:3: tools.pyhton: unknown tool \"pyhton\" (did you mean \"python\"?); tools written in Go must be registered by the program that runs the file",
		}},
		{"unknown_top_field.yaml", []string{
			"3:1: nodez: unknown field \"nodez\" (did you mean \"nodes\"?)",
		}},
		{"unreachable_node.yaml", []string{
			"11:3: nodes.lonely: node \"lonely\" is never reached: no edge or route from start leads to it",
		}},
		{"web_search_without_key.yaml", []string{
			"4:3: tools.web_search: provider tavily needs api_key (for example ${TAVILY_API_KEY})",
		}},
		{"wrong_api_version.yaml", []string{
			"1:13: apiVersion: must be coorflow/v1, not \"coorflow/v2\"",
		}},
		{"wrong_reducer_for_type.yaml", []string{
			"4:34: state.notes.reducer: reducer append needs a channel of type array, but notes has type string",
		}},
		{"yaml_syntax.yaml", []string{
			"4:1: invalid YAML: did not find expected ',' or '}'",
		}},
	}
	files, err := filepath.Glob("testdata/bad/*.yaml")
	require.NoError(t, err)
	require.Len(t, files, len(cases), "every bad file has a case")
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "bad", c.file)
			want := make([]string, len(c.want))
			for i, w := range c.want {
				want[i] = path + ":" + w
			}
			assert.Equal(t, want, problemsOf(t, path))
		})
	}
}
