// Package workflows loads workflows declared in YAML files (apiVersion
// coorflow/v1) and holds coorflow's built-in ones as such files:
// research.yaml, in the Deer-Flow shape, and coor.yaml, with dynamic
// agents.
//
// A file declares state channels, models, tools, settings, nodes and
// edges:
//
//	apiVersion: coorflow/v1
//	name: review
//	input: topic                  # the channel `coorflow run --input` writes (default input)
//	output: draft                 # the channel printed at the end (default answer)
//	config: {max_revisions: 2}    # values expressions read as config.<name>; a run's config may replace them
//	state:                        # channel: a JSON Schema and a reducer (last, append, messages, merge, sum)
//	  topic: {type: string}
//	  draft: {type: string}
//	  score: {type: number, minimum: 0, maximum: 1}
//	  revisions: {type: integer}
//	models:
//	  basic: {provider: openai, model: gpt-4o-mini, base_url: "${LLM_BASE_URL:-https://api.openai.com/v1}"}
//	tools:
//	  web_search: {provider: tavily, api_key: "${TAVILY_API_KEY}", optional: true}
//	settings: {step_limit: 50}
//	nodes:
//	  write: {type: llm, prompt: "Write about {{ state.topic }}.", output: draft, set: {revisions: "state.revisions + 1"}}
//	  grade: {type: llm, prompt: "Grade 0 to 1: {{ state.draft }}", output: score}
//	edges:
//	  - {from: start, to: write}
//	  - {from: write, to: grade}
//	  - from: grade
//	    branches:
//	      - {when: "state.score < 0.8 && state.revisions < config.max_revisions", to: write}
//	      - {to: end}
//
// Node types: llm, react, tool, router, subgraph, go (a Go function the
// embedding program registers, WithFuncs), and the prebuilt nodes of
// package nodes and factory: coordinator, planner, human_review, team,
// reporter, background_investigator, research_team and worker. A file's
// graph has the channels of package nodes (input, messages, request,
// plan, findings, answer...) that its prebuilt nodes use, typed: a
// planner brings plan, a coordinator input and answer. A file without
// such a node declares the ones it reads (a declaration of input that
// fits the prebuilt input is that channel; one with another type or
// reducer, in a file whose node types do not use the name, is the file's
// own channel, so plan: {type: string} is free without a planner); the
// other channels a file declares are dynamic keys
// whose writes are checked against their schema.
//
// A team node may fix its work in the file — CoorAgent's production mode,
// which File.Export writes from a plan that worked: plan is a fixed plan
// it runs on every run instead of the planner's (its title, descriptions
// and notes are templates, such as {{ state.request }}), and agents are
// agents written out (system prompt, tier, tools), given to the team
// directly: the agent registry is neither read nor written for them.
//
//	input: request
//	nodes:
//	  team:
//	    type: team
//	    plan:
//	      title: SQLite or PostgreSQL
//	      steps:
//	        - {id: s1, agent_name: sqlite_analyst, title: Assess SQLite, description: "Assess SQLite for: {{ state.request }}"}
//	        - {id: s2, agent_name: researcher, title: Recommend, description: Recommend one., depends_on: [s1]}
//	    agents:
//	      sqlite_analyst: {tier: reasoning, tools: [http_fetch], system: "You assess SQLite..."}
//	  reporter: {type: reporter}
//
// Conditions (conditional edges, router routes), tool arguments, the
// {{ }} placeholders of prompts and the values of set are expr-lang
// expressions over state and config, compiled once at load and
// type-checked against the channels' schemas. A node's set section (any
// node but a subgraph) writes the values of its expressions to channels,
// evaluated on the state the node saw when its step began, once the node
// has finished, and written with its own update through each channel's
// reducer. config is the file's config section, with the values a run's
// config (package runs: the Platform API's config.configurable, /v1's
// config, coorflow run --config) gives for the keys it declares: the
// file's values are their defaults and types, and a run's value of
// another type fails the expression with an error naming the key. A key
// the file does not declare reaches Go nodes only (runs.ConfigFrom). A
// run that takes more than settings.step_limit steps (default
// 100) fails with graph.ErrStepLimit, whose message names that setting. ${ENV} references are allowed only in endpoints and secrets
// (models.<tier>.base_url, tools.web_search.base_url and api_key).
//
// A file may come from someone else, so what it can reach is bounded:
// ${NAME} and api_key_env read only *_API_KEY, *_BASE_URL, OLLAMA_HOST,
// SEARXNG_URL and the names WithAllowedEnv adds; subgraph files stay in
// the file's directory tree unless WithIncludeRoot allows another, are
// loaded once each, and a workflow has at most 100 files and 10,000 nodes
// (each subgraph counted once per inclusion); YAML aliases may add at
// most 10,000 entries and never repeat themselves; one evaluation of an
// expression builds at most 16 MiB of text and lists
// (ErrExpressionBudget), and groupBy is not available.
//
// Load validates a file against the JSON Schema in schema/ (Schema), then
// checks names, references, types, expressions and the shape of the graph;
// every problem is reported at once with its file:line:column and key path
// (*FileError). Compile builds the graph with an Env (models, store,
// saver); Resolve finds the models: the file's, overridden by the
// environment and flags (llm.Config.ApplyEnv gives the precedence), or,
// when no provider is configured, a demo model: the scripted one of the
// file's demo.script, or else the ReactiveDemo, which plays the built-in
// node types from each request (the built-ins run on it).
//
// research.yaml and coor.yaml (Builtin) are the one definition of the
// built-in workflows: Research and Coor compile them with an Env.
package workflows
