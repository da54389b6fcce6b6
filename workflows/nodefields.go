package workflows

// The schemas of the node types' fields ($defs of the file schema), one
// per entry of nodeKindList, which withRegistrations writes in.
const (
	llmFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["prompt", "output"],
  "description": "One model call: the prompt (and system prompt), with {{ expression }} placeholders, and the channel its answer is written to (parsed as JSON when the channel is not a string).",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "tier": {"$ref": "#/$defs/tier"},
    "system": {"type": "string"},
    "prompt": {"type": "string", "minLength": 1},
    "output": {"type": "string", "minLength": 1}
  }
}`

	reactFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["prompt", "output"],
  "description": "A ReAct agent: model calls with tools until it answers; its answer is written to output.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "tier": {"$ref": "#/$defs/tier"},
    "system": {"type": "string"},
    "prompt": {"type": "string", "minLength": 1},
    "output": {"type": "string", "minLength": 1},
    "tools": {"$ref": "#/$defs/toolNames"},
    "skills": {"$ref": "#/$defs/skillNames"},
    "max_turns": {"$ref": "#/$defs/positiveInt"},
    "context": {"$ref": "#/$defs/context", "description": "The agent's window, over settings.context: on by default (large tool results offloaded, old ones cleared, both readable back with read_context; the history summarized near the model's window); disabled: true sends the whole conversation."}
  }
}`

	coordinatorFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["next"],
  "description": "Answers small talk itself and ends the run; hands tasks to next.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "tier": {"$ref": "#/$defs/tier"},
    "next": {"$ref": "#/$defs/nodeName"}
  }
}`

	plannerFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["review", "reporter"],
  "description": "Makes the plan; sends it to review, or to reporter when enough is known.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "tier": {"$ref": "#/$defs/tier"},
    "review": {"$ref": "#/$defs/nodeName"},
    "reporter": {"$ref": "#/$defs/nodeName"},
    "new_agents": {"type": "boolean", "description": "Plans may declare new agents, built by a team node (the agent registry lists the agents)."}
  }
}`

	reviewFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["next", "replan"],
  "description": "Shows the plan to a person (an interrupt): accepted plans go to next, feedback to replan.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "next": {"$ref": "#/$defs/nodeName"},
    "replan": {"$ref": "#/$defs/nodeName"},
    "auto_accept": {"type": "boolean"}
  }
}`

	teamFields = `{
  "type": "object",
  "additionalProperties": false,
  "description": "Builds the plan's new agents concurrently, then runs its steps as a DAG. With plan, it runs that fixed plan instead of the planner's; with agents, steps that name one of them run with it as written here (the agent registry is neither read nor written for them).",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "tier": {"$ref": "#/$defs/tier"},
    "context": {"$ref": "#/$defs/context", "description": "The windows of the team's agents, over settings.context."},
    "plan": {"$ref": "#/$defs/fixedPlan"},
    "agents": {
      "type": "object",
      "description": "Agents given to the team, by snake_case name: a step whose agent_name is one of them runs with it.",
      "additionalProperties": {"$ref": "#/$defs/fixedAgent"}
    }
  }
}`

	reporterFields = `{
  "type": "object",
  "additionalProperties": false,
  "description": "Writes the final report from the findings.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "tier": {"$ref": "#/$defs/tier"}
  }
}`

	routerFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["routes"],
  "description": "Goes to the first route whose condition holds; the last route has no condition.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "routes": {"$ref": "#/$defs/routes"}
  }
}`

	toolNodeFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["tool"],
  "description": "Calls a tool with arguments computed from the state.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "tool": {"type": "string", "minLength": 1},
    "args": {"type": "object", "additionalProperties": {"$ref": "#/$defs/expression"}},
    "output": {"type": "string", "minLength": 1}
  }
}`

	subgraphFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["file"],
  "description": "Another workflow file, run as this node; channels are shared by name.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"},
    "file": {"type": "string", "minLength": 1}
  }
}`

	interruptFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["payload"],
  "description": "Pauses the run with a question for a person (an interrupt): payload is an expression over state and config whose value (any JSON) the client sees; the answer given on resume, any JSON value, is written to output, checked against that channel's type. An answer that does not fit loses nothing: the node asks again, its payload with an error field saying why (a payload that is no object comes as {payload, error}), up to 10 answers.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "payload": {"$ref": "#/$defs/expression"},
    "output": {"type": "string", "minLength": 1}
  }
}`

	goFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["func"],
  "description": "A Go function the embedding program registers by name.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "func": {"type": "string", "minLength": 1},
    "destinations": {"$ref": "#/$defs/nodeNames"}
  }
}`

	backgroundFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["next"],
  "description": "Searches the web for the request before planning (with the web_search tool, when declared).",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "next": {"$ref": "#/$defs/nodeName"}
  }
}`

	researchTeamFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["workers", "planner"],
  "description": "Sends the plan's next step to the worker node of its agent, one step at a time; back to planner when all are done.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "workers": {"$ref": "#/$defs/nodeNames"},
    "planner": {"$ref": "#/$defs/nodeName"}
  }
}`

	workerFields = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["agent"],
  "description": "Runs the plan's current step with an agent: researcher or coder (built in), or one described here.",
  "properties": {
    "type": true, "description": {"type": "string"}, "retry": {"$ref": "#/$defs/retry"}, "timeout": {"$ref": "#/$defs/duration"}, "set": {"$ref": "#/$defs/set"}, "emit": {"$ref": "#/$defs/emit"}, "delay": {"$ref": "#/$defs/delay"},
    "agent": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,47}$"},
    "tier": {"$ref": "#/$defs/tier"},
    "system": {"type": "string", "minLength": 1},
    "tools": {"$ref": "#/$defs/toolNames"},
    "skills": {"$ref": "#/$defs/skillNames"},
    "context": {"$ref": "#/$defs/context", "description": "The agent's window, over settings.context, as a react node's."}
  }
}`
)
