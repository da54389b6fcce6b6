package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/coorflow/coorflow/llm"
)

// The YAML form of a Script:
//
//	latency: 10ms                  # optional, for every reply
//	when_input_contains: [SQLite]  # optional: the requests the script is for
//	agents:
//	  researcher:                  # replies for the agent's turns, in order
//	    - reasoning: "I should search first."
//	      tool_calls:
//	        - name: web_search
//	          arguments: {query: "go generics"}   # a mapping or a JSON string
//	        - id: call_fetch       # ids default to call_<agent>_<turn>_<n>
//	          name: fetch
//	          arguments: '{"url": "https://go.dev"}'
//	    - text: "Generics arrived in Go 1.18."
//	rules:                         # tried first, in order
//	  - when_prompt_contains: "Summarize"
//	    when_prompt_lacks: "## Step" # optional: a text the call must not hold
//	    agent: planner             # optional
//	    times: 1                   # optional limit
//	    reply: {text: "A summary."}
//	  - when_prompt_contains: "flaky"
//	    reply: {error: {class: rate_limited, message: "slow down"}}
//	default: {text: "I cannot help with that."}
//
// A reply has text, reasoning, tool_calls, stop_reason, latency and error;
// an error's class is one of context_overflow, rate_limited, transient and
// permanent, and the error returned wraps the matching llm class.
type fileScript struct {
	Latency           time.Duration          `yaml:"latency"`
	WhenInputContains []string               `yaml:"when_input_contains"`
	Agents            map[string][]fileReply `yaml:"agents"`
	Rules             []fileRule             `yaml:"rules"`
	Default           *fileReply             `yaml:"default"`
}

type fileRule struct {
	Agent              string    `yaml:"agent"`
	WhenPromptContains string    `yaml:"when_prompt_contains"`
	WhenPromptLacks    string    `yaml:"when_prompt_lacks"`
	Times              int       `yaml:"times"`
	Reply              fileReply `yaml:"reply"`
}

type fileReply struct {
	Text       string         `yaml:"text"`
	Reasoning  string         `yaml:"reasoning"`
	ToolCalls  []fileToolCall `yaml:"tool_calls"`
	StopReason string         `yaml:"stop_reason"`
	Latency    time.Duration  `yaml:"latency"`
	Error      *fileError     `yaml:"error"`
}

type fileToolCall struct {
	ID        string    `yaml:"id"`
	Name      string    `yaml:"name"`
	Arguments yaml.Node `yaml:"arguments"`
}

type fileError struct {
	Class   yaml.Node `yaml:"class"`
	Message string    `yaml:"message"`
}

// errorClasses maps the YAML names of error classes to llm's sentinels.
var errorClasses = map[string]error{
	"context_overflow": llm.ErrContextOverflow,
	"rate_limited":     llm.ErrRateLimited,
	"transient":        llm.ErrTransient,
	"permanent":        llm.ErrPermanent,
}

// MaxScriptBytes is the largest script Load and LoadFile read: a script
// is read whole, and a workflow file from elsewhere may name it.
const MaxScriptBytes = 4 << 20

// Load reads a Script from YAML (see the format above). Errors give the
// line of the offending entry and wrap ErrInvalidScript; they quote none
// of the script's text, which may be a file that is not a script at all.
// A script longer than MaxScriptBytes is an error (ErrScriptTooLarge).
func Load(r io.Reader) (Script, error) {
	return load(r, "")
}

// LoadFile reads a Script from a YAML file, like Load; errors name the
// file.
func LoadFile(path string) (Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return Script{}, fmt.Errorf("scripted: load script: %w", err)
	}
	defer f.Close()
	return load(f, path)
}

func load(r io.Reader, file string) (Script, error) {
	prefix := ""
	if file != "" {
		prefix = "scripted: " + file + ": "
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxScriptBytes+1))
	if err != nil {
		return Script{}, fmt.Errorf("scripted: read script: %w", err)
	}
	if len(data) > MaxScriptBytes {
		return Script{}, fmt.Errorf("%s%w", prefix, ErrScriptTooLarge)
	}
	var fs fileScript
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fs); err != nil && !errors.Is(err, io.EOF) {
		return Script{}, fmt.Errorf("%s%w: %s", prefix, ErrInvalidScript, unquoted(err))
	}
	s, err := fs.script()
	if err != nil {
		return Script{}, fmt.Errorf("%s%w", prefix, err)
	}
	return s, nil
}

func (fs fileScript) script() (Script, error) {
	s := Script{Latency: fs.Latency, InputContains: fs.WhenInputContains, Agents: map[string][]Reply{}}
	for name, replies := range fs.Agents {
		for i, fr := range replies {
			r, err := fr.reply(fmt.Sprintf("agents.%s[%d]", name, i))
			if err != nil {
				return Script{}, err
			}
			s.Agents[name] = append(s.Agents[name], r)
		}
	}
	for i, fr := range fs.Rules {
		r, err := fr.Reply.reply(fmt.Sprintf("rules[%d].reply", i))
		if err != nil {
			return Script{}, err
		}
		s.Rules = append(s.Rules, Rule{Agent: fr.Agent, PromptContains: fr.WhenPromptContains, PromptLacks: fr.WhenPromptLacks,
			Times: fr.Times, Reply: r})
	}
	if fs.Default != nil {
		r, err := fs.Default.reply("default")
		if err != nil {
			return Script{}, err
		}
		s.Default = &r
	}
	return s, nil
}

// reply converts a reply found at path (e.g. "agents.coder[2]").
func (fr fileReply) reply(path string) (Reply, error) {
	r := Reply{Text: fr.Text, Reasoning: fr.Reasoning, StopReason: fr.StopReason, Latency: fr.Latency}
	for i, ftc := range fr.ToolCalls {
		if ftc.Name == "" {
			return Reply{}, fmt.Errorf("%w: %s.tool_calls[%d]: missing name", ErrInvalidScript, path, i)
		}
		args, err := arguments(ftc.Arguments)
		if err != nil {
			return Reply{}, err
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: ftc.ID, Name: ftc.Name, Arguments: args})
	}
	if fe := fr.Error; fe != nil {
		class, ok := errorClasses[fe.Class.Value]
		if !ok {
			return Reply{}, fmt.Errorf("%w: %s.error: line %d: unknown error class (want context_overflow, "+
				"rate_limited, transient or permanent)", ErrInvalidScript, path, fe.Class.Line)
		}
		r.Err = fmt.Errorf("scripted: %s: %w", fe.Message, class)
	}
	return r, nil
}

// arguments renders tool-call arguments given as a mapping or as a JSON
// string.
func arguments(n yaml.Node) (string, error) {
	switch n.Kind {
	case 0:
		return "", nil
	case yaml.ScalarNode:
		if !json.Valid([]byte(n.Value)) {
			return "", fmt.Errorf("%w: line %d: arguments are not valid JSON", ErrInvalidScript, n.Line)
		}
		return n.Value, nil
	case yaml.MappingNode:
		var v map[string]any
		if err := n.Decode(&v); err != nil {
			return "", fmt.Errorf("%w: line %d: %s", ErrInvalidScript, n.Line, unquoted(err))
		}
		b, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("%w: line %d: arguments: %v", ErrInvalidScript, n.Line, err)
		}
		return string(b), nil
	}
	return "", fmt.Errorf("%w: line %d: arguments must be a mapping or a JSON string", ErrInvalidScript, n.Line)
}

// quotedValue is a value yaml.v3 quotes in its errors ("cannot unmarshal
// !!str `root:x:0:0...` into ...").
var quotedValue = regexp.MustCompile("\\s*`[^`]*`")

// unquoted is the message of a YAML error without the values it quotes.
func unquoted(err error) string {
	return quotedValue.ReplaceAllString(err.Error(), "")
}
