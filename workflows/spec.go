package workflows

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// The Go form of a workflow file, decoded once the file has passed the
// JSON Schema (schema/coorflow-v1.schema.json documents every field).

type fileSpec struct {
	APIVersion  string               `yaml:"apiVersion"`
	Name        string               `yaml:"name"`
	Description string               `yaml:"description"`
	Input       string               `yaml:"input"`
	Output      string               `yaml:"output"`
	Config      map[string]any       `yaml:"config"`
	Models      map[string]modelSpec `yaml:"models"`
	Demo        *demoSpec            `yaml:"demo"`
	Settings    settingsSpec         `yaml:"settings"`
	Edges       []edgeSpec           `yaml:"edges"`
	State       yaml.Node            `yaml:"state"`
	Tools       yaml.Node            `yaml:"tools"`
	Skills      []string             `yaml:"skills"`
	Nodes       yaml.Node            `yaml:"nodes"`
	channels    []named[channelSpec] `yaml:"-"`
	tools       []named[toolSpec]    `yaml:"-"`
	nodes       []named[nodeSpec]    `yaml:"-"`
}

// named is an entry of an ordered mapping, with its location.
type named[T any] struct {
	Name string
	Spec T
	Key  position
	Ptr  string
}

type modelSpec struct {
	Provider       string     `yaml:"provider"`
	Model          string     `yaml:"model"`
	BaseURL        string     `yaml:"base_url"`
	APIKeyEnv      string     `yaml:"api_key_env"`
	MaxRetries     int        `yaml:"max_retries"`
	Timeout        string     `yaml:"timeout"`
	MaxInputTokens int        `yaml:"max_input_tokens"`
	Price          *priceSpec `yaml:"price"`
}

type priceSpec struct {
	Input       float64  `yaml:"input"`
	CachedInput *float64 `yaml:"cached_input"`
	CacheWrite  float64  `yaml:"cache_write"`
	Output      float64  `yaml:"output"`
}

type budgetSpec struct {
	Tokens   int     `yaml:"tokens"`
	USD      float64 `yaml:"usd"`
	OnExceed string  `yaml:"on_exceed"`
}

type demoSpec struct {
	Script string `yaml:"script"`
}

// channelSpec is a channel: its JSON Schema (kept as decoded) and reducer.
type channelSpec struct {
	Reducer string
	Type    string
	Schema  map[string]any
}

type toolSpec struct {
	Timeout      string   `yaml:"timeout"`
	Interpreter  string   `yaml:"interpreter"`
	AllowHosts   []string `yaml:"allow_hosts"`
	DenyHosts    []string `yaml:"deny_hosts"`
	AllowPrivate bool     `yaml:"allow_private"`
	Provider     string   `yaml:"provider"`
	BaseURL      string   `yaml:"base_url"`
	APIKey       string   `yaml:"api_key"`
	MaxResults   int      `yaml:"max_results"`
	Optional     bool     `yaml:"optional"`
}

type settingsSpec struct {
	StepLimit           int          `yaml:"step_limit"`
	MaxConcurrency      int          `yaml:"max_concurrency"`
	MaxSteps            int          `yaml:"max_steps"`
	MaxIterations       int          `yaml:"max_iterations"`
	MaxTurns            int          `yaml:"max_turns"`
	ConfidenceThreshold float64      `yaml:"confidence_threshold"`
	BuildConcurrency    int          `yaml:"build_concurrency"`
	StepConcurrency     int          `yaml:"step_concurrency"`
	FailFast            bool         `yaml:"fail_fast"`
	AutoAccept          bool         `yaml:"auto_accept"`
	Context             *contextSpec `yaml:"context"`
	Memory              *memorySpec  `yaml:"memory"`
	Budget              *budgetSpec  `yaml:"budget"`
}

// contextSpec is a context section: settings.context for the whole file,
// a node's context for that node (see context.go).
type contextSpec struct {
	Disabled bool `yaml:"disabled"`
	Steps    struct {
		Disabled   bool    `yaml:"disabled"`
		Threshold  float64 `yaml:"threshold"`
		Full       int     `yaml:"full"`
		Summarized int     `yaml:"summarized"`
	} `yaml:"steps"`
	Offload struct {
		Disabled     bool `yaml:"disabled"`
		Tokens       int  `yaml:"tokens"`
		PreviewLines int  `yaml:"preview_lines"`
		OutputBytes  int  `yaml:"output_bytes"`
		SummaryBytes int  `yaml:"summary_bytes"`
	} `yaml:"offload"`
	Clear struct {
		Disabled  bool     `yaml:"disabled"`
		Threshold float64  `yaml:"threshold"`
		KeepTurns int      `yaml:"keep_turns"`
		MinTokens int      `yaml:"min_tokens"`
		Exclude   []string `yaml:"exclude"`
	} `yaml:"clear"`
	History struct {
		Disabled  bool    `yaml:"disabled"`
		Threshold float64 `yaml:"threshold"`
		Keep      float64 `yaml:"keep"`
	} `yaml:"history"`
}

type retrySpec struct {
	MaxAttempts     int     `yaml:"max_attempts"`
	InitialInterval string  `yaml:"initial_interval"`
	BackoffFactor   float64 `yaml:"backoff_factor"`
	MaxInterval     string  `yaml:"max_interval"`
	Jitter          bool    `yaml:"jitter"`
}

type routeSpec struct {
	When string            `yaml:"when"`
	To   string            `yaml:"to"`
	Set  map[string]string `yaml:"set"`
}

// memorySpec turns memory across threads on.
type memorySpec struct {
	Enabled bool `yaml:"enabled"`
	Recall  int  `yaml:"recall"`
}

// nodeSpec holds the fields of every node type; the schema allows each
// type only its own.
type nodeSpec struct {
	Type         string            `yaml:"type"`
	Description  string            `yaml:"description"`
	Retry        *retrySpec        `yaml:"retry"`
	Timeout      string            `yaml:"timeout"`
	Tier         string            `yaml:"tier"`
	System       string            `yaml:"system"`
	Prompt       string            `yaml:"prompt"`
	Output       string            `yaml:"output"`
	Tools        []string          `yaml:"tools"`
	Skills       []string          `yaml:"skills"`
	MaxTurns     int               `yaml:"max_turns"`
	Next         string            `yaml:"next"`
	Review       string            `yaml:"review"`
	Reporter     string            `yaml:"reporter"`
	NewAgents    bool              `yaml:"new_agents"`
	Replan       string            `yaml:"replan"`
	AutoAccept   *bool             `yaml:"auto_accept"`
	Routes       []routeSpec       `yaml:"routes"`
	Tool         string            `yaml:"tool"`
	Args         map[string]string `yaml:"args"`
	File         string            `yaml:"file"`
	Func         string            `yaml:"func"`
	Destinations []string          `yaml:"destinations"`
	Workers      []string          `yaml:"workers"`
	Planner      string            `yaml:"planner"`
	Agent        string            `yaml:"agent"`
	Plan         *planSpec         `yaml:"plan"`
	Agents       yaml.Node         `yaml:"agents"`
	// Context sets the window of a react node or a team's agents, over
	// settings.context (see context.go).
	Context *contextSpec `yaml:"context"`
	// Set writes expressions' values to channels (see set.go).
	Set map[string]string `yaml:"set"`
	// Emit is an expression whose value the node sends to the run's
	// stream as a custom event when it starts (see emit.go).
	Emit string `yaml:"emit"`
	// Delay is an expression: the seconds the node waits before its own
	// work (see delay.go).
	Delay string `yaml:"delay"`
	// Payload is an interrupt node's question: an expression.
	Payload string `yaml:"payload"`
}

// planSpec is a team node's fixed plan.
type planSpec struct {
	Title   string     `yaml:"title"`
	Thought string     `yaml:"thought"`
	Locale  string     `yaml:"locale"`
	Steps   []stepSpec `yaml:"steps"`
}

type stepSpec struct {
	ID          string   `yaml:"id"`
	AgentName   string   `yaml:"agent_name"`
	Title       string   `yaml:"title"`
	Description string   `yaml:"description"`
	Note        string   `yaml:"note"`
	StepType    string   `yaml:"step_type"`
	NeedSearch  bool     `yaml:"need_search"`
	DependsOn   []string `yaml:"depends_on"`
}

// agentSpec is an agent a team node's agents section writes out.
type agentSpec struct {
	Role        string   `yaml:"role"`
	Description string   `yaml:"description"`
	Tier        string   `yaml:"tier"`
	Tools       []string `yaml:"tools"`
	Skills      []string `yaml:"skills"`
	System      string   `yaml:"system"`
}

type edgeSpec struct {
	From     string      `yaml:"from"`
	To       string      `yaml:"to"`
	Branches []routeSpec `yaml:"branches"`
	Join     []string    `yaml:"join"`
	// Set writes expressions' values to channels when the edge is
	// taken (see set.go).
	Set map[string]string `yaml:"set"`
}

// decodeSpec decodes a document that passed the schema or, when invalid,
// one that did not: what does not fit its Go form is left out (the
// schema reported it).
func decodeSpec(d *document, invalid bool) (*fileSpec, error) {
	var s fileSpec
	decode := func(n *yaml.Node, v any) error {
		err := n.Decode(v)
		var te *yaml.TypeError
		if invalid && errors.As(err, &te) {
			return nil
		}
		return err
	}
	if err := decode(d.root, &s); err != nil {
		return nil, fmt.Errorf("workflows: decode %s: %w", d.file, err)
	}
	for _, e := range mapping(&s.State, "/state") {
		var c channelSpec
		raw, _ := lookupValue(d.value, e.Ptr).(map[string]any)
		c.Schema = map[string]any{}
		for k, v := range raw {
			if k != "reducer" {
				c.Schema[k] = v
			}
		}
		c.Reducer, _ = raw["reducer"].(string)
		c.Type, _ = raw["type"].(string)
		s.channels = append(s.channels, named[channelSpec]{Name: e.Name, Spec: c, Key: e.Key, Ptr: e.Ptr})
	}
	for _, e := range mapping(&s.Tools, "/tools") {
		var t toolSpec
		if err := decode(e.node, &t); err != nil {
			return nil, fmt.Errorf("workflows: decode %s: tools.%s: %w", d.file, e.Name, err)
		}
		s.tools = append(s.tools, named[toolSpec]{Name: e.Name, Spec: t, Key: e.Key, Ptr: e.Ptr})
	}
	for _, e := range mapping(&s.Nodes, "/nodes") {
		var n nodeSpec
		if err := decode(e.node, &n); err != nil {
			return nil, fmt.Errorf("workflows: decode %s: nodes.%s: %w", d.file, e.Name, err)
		}
		s.nodes = append(s.nodes, named[nodeSpec]{Name: e.Name, Spec: n, Key: e.Key, Ptr: e.Ptr})
	}
	return &s, nil
}

type entry struct {
	Name string
	Key  position
	Ptr  string
	node *yaml.Node
}

// mapping returns the entries of a mapping node in file order, the first
// of duplicate keys only.
func mapping(n *yaml.Node, ptr string) []entry {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	var out []entry
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if seen[k.Value] {
			continue
		}
		seen[k.Value] = true
		out = append(out, entry{Name: k.Value, Key: position{k.Line, k.Column}, Ptr: ptr + "/" + escapePointer(k.Value), node: n.Content[i+1]})
	}
	return out
}
