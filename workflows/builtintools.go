package workflows

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/store/memories"
	"github.com/coorflow/coorflow/tools"
)

// builtinTool is a tool a file can declare without Go code: one entry of
// builtinTools, which the schema, the checks, the toolset, Export and
// Effects all read (docs/architecture.md, "How to add a built-in tool").
type builtinTool struct {
	name string
	// schema is the JSON Schema of its entry under tools, as the schema
	// file writes it ($defs.tools.properties; withRegistrations fills
	// the list in from the table).
	schema string
	// check records the problems of its declaration that the schema
	// cannot see; nil: none.
	check func(f *File, ps *problems, t named[toolSpec])
	// build makes it for the file's toolset; a nil tool adds none (the
	// sections mcp and a2a add their servers' and agents' tools later).
	build func(f *File, t named[toolSpec], b toolBuild) (tools.Tool, error)
	// exportAs declares it, in YAML, in a file Export writes when an
	// agent uses it and the file does not declare it; "": it is left out.
	exportAs string
	// effects records what it makes the program do outside its process;
	// nil: nothing.
	effects func(f *File, t named[toolSpec], add func(kind, what, ptr string))
	// section: the entry is a section of servers or agents whose tools
	// they name (mcp, a2a), not a tool; BuiltinTools leaves it out.
	section bool
}

// toolBuild is what building a tool may use.
type toolBuild struct {
	env     Env
	mem     *memories.Memories
	timeout time.Duration
}

// builtinTools are the tools a file can declare without Go code, in the
// order the schema lists them.
var builtinTools = []builtinTool{
	{
		name: "python",
		schema: `{
  "type": ["object", "null"],
  "additionalProperties": false,
  "properties": {
    "timeout": {"$ref": "#/$defs/duration"},
    "interpreter": {"type": "string", "minLength": 1}
  }
}`,
		build: func(_ *File, t named[toolSpec], b toolBuild) (tools.Tool, error) {
			return pythonTool(b.env.Python, b.timeout, t.Spec.Interpreter), nil
		},
		exportAs: "{}",
		effects: func(_ *File, t named[toolSpec], add func(kind, what, ptr string)) {
			add(EffectCode, "python: code the model writes, run by "+cmp.Or(t.Spec.Interpreter, "python3")+
				" when the program allows code execution (coorflow --allow-code-exec)", t.Ptr)
		},
	},
	{
		name: "http_fetch",
		schema: `{
  "type": ["object", "null"],
  "additionalProperties": false,
  "properties": {
    "timeout": {"$ref": "#/$defs/duration"},
    "allow_hosts": {"type": "array", "items": {"type": "string"}},
    "deny_hosts": {"type": "array", "items": {"type": "string"}},
    "allow_private": {"type": "boolean"}
  }
}`,
		build: func(_ *File, t named[toolSpec], b toolBuild) (tools.Tool, error) {
			s := t.Spec
			return tools.HTTPFetch(tools.HTTPFetchConfig{Timeout: b.timeout, AllowHosts: s.AllowHosts, DenyHosts: s.DenyHosts, AllowPrivate: s.AllowPrivate}), nil
		},
		exportAs: "{}",
		effects: func(_ *File, t named[toolSpec], add func(kind, what, ptr string)) {
			what := "any URL the model asks http_fetch for"
			if len(t.Spec.AllowHosts) > 0 {
				what = "URLs the model asks http_fetch for, on " + strings.Join(t.Spec.AllowHosts, ", ")
			}
			add(EffectURL, what, t.Ptr)
		},
	},
	{
		name: "web_search",
		schema: `{
  "type": "object",
  "additionalProperties": false,
  "required": ["provider"],
  "properties": {
    "provider": {"enum": ["searxng", "tavily"]},
    "base_url": {"type": "string", "description": "The SearXNG instance, or another Tavily endpoint; ${ENV} allowed."},
    "api_key": {"type": "string", "description": "The Tavily key, as ${ENV}."},
    "max_results": {"$ref": "#/$defs/positiveInt"},
    "optional": {"type": "boolean", "description": "Leave the tool out, instead of failing, when a ${ENV} it uses is not set."}
  }
}`,
		check:    checkWebSearch,
		build:    buildWebSearch,
		exportAs: `{provider: tavily, api_key: "${TAVILY_API_KEY}", optional: true}`,
		effects: func(_ *File, t named[toolSpec], add func(kind, what, ptr string)) {
			if t.Spec.BaseURL != "" {
				add(EffectURL, t.Spec.BaseURL, t.Ptr+"/base_url")
			} else if t.Spec.Provider == "tavily" {
				add(EffectURL, "https://api.tavily.com (web_search)", t.Ptr)
			}
		},
	},
	{
		name:   "ask_human",
		schema: `{"type": ["object", "null"], "additionalProperties": false, "properties": {}}`,
		build: func(*File, named[toolSpec], toolBuild) (tools.Tool, error) {
			return nodes.AskHumanTool(), nil
		},
		exportAs: "{}",
	},
	{
		name:   memories.RememberTool,
		schema: `{"type": ["object", "null"], "additionalProperties": false, "properties": {"timeout": {"$ref": "#/$defs/duration"}}, "description": "Keeps a memory for the owner's later threads (settings.memory)."}`,
		build:  buildMemoryTool,
	},
	{
		name:   memories.RecallTool,
		schema: `{"type": ["object", "null"], "additionalProperties": false, "properties": {"timeout": {"$ref": "#/$defs/duration"}}, "description": "Searches the owner's memories of earlier threads (settings.memory)."}`,
		build:  buildMemoryTool,
	},
	{
		name: mcpKey,
		schema: `{
  "type": "object",
  "description": "MCP servers whose tools agents may use, by name. A node names a server (all its tools) or one tool of it as <server>_<tool>; ` + "`coorflow tools list FILE`" + ` shows them with their schemas.",
  "propertyNames": {"pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$"},
  "additionalProperties": {"$ref": "#/$defs/mcpServer"}
}`,
		check: func(f *File, ps *problems, _ named[toolSpec]) { f.checkMCP(ps) },
		build: func(*File, named[toolSpec], toolBuild) (tools.Tool, error) {
			return nil, nil // its servers' tools: addMCPTools
		},
		effects: func(f *File, _ named[toolSpec], add func(kind, what, ptr string)) {
			for _, s := range f.mcpServers() {
				if s.Spec.Command != "" {
					add(EffectCommand, shellLine(append([]string{s.Spec.Command}, s.Spec.Args...)), s.Ptr+"/command")
				}
				if s.Spec.URL != "" {
					add(EffectURL, s.Spec.URL, s.Ptr+"/url")
				}
			}
		},
		section: true,
	},
	{
		name: a2aKey,
		schema: `{
  "type": "object",
  "description": "Remote A2A agents, by name: each is a tool of that name, described by its agent card's skills. A call sends the model's message and returns the task's answer; its task is journaled, so a node that runs again does not send it again.",
  "propertyNames": {"pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"},
  "additionalProperties": {"$ref": "#/$defs/a2aAgent"}
}`,
		check: func(f *File, ps *problems, _ named[toolSpec]) { f.checkA2A(ps) },
		build: func(*File, named[toolSpec], toolBuild) (tools.Tool, error) {
			return nil, nil // its agents, each a tool: addA2ATools
		},
		effects: func(f *File, _ named[toolSpec], add func(kind, what, ptr string)) {
			for _, a := range f.a2aAgents() {
				add(EffectURL, a.Spec.URL+" (A2A agent "+a.Name+")", a.Ptr+"/url")
			}
		},
		section: true,
	},
}

// lookupBuiltinTool returns the built-in tool called name.
func lookupBuiltinTool(name string) (builtinTool, bool) {
	i := slices.IndexFunc(builtinTools, func(b builtinTool) bool { return b.name == name })
	if i < 0 {
		return builtinTool{}, false
	}
	return builtinTools[i], true
}

func isBuiltinTool(name string) bool {
	_, ok := lookupBuiltinTool(name)
	return ok
}

// BuiltinTools returns the names of the tools a file can declare without
// Go code (MCP servers and A2A agents aside, whose tools their sections
// name).
func BuiltinTools() []string {
	var out []string
	for _, b := range builtinTools {
		if !b.section {
			out = append(out, b.name)
		}
	}
	return out
}

func checkWebSearch(f *File, ps *problems, t named[toolSpec]) {
	l := f.doc.loc(t.Ptr)
	switch {
	case t.Spec.Provider == "tavily" && t.Spec.APIKey == "":
		ps.at(l.key, l.path, "provider tavily needs api_key (for example ${TAVILY_API_KEY})")
	case t.Spec.Provider == "searxng" && t.Spec.BaseURL == "":
		ps.at(l.key, l.path, "provider searxng needs base_url (for example ${SEARXNG_URL})")
	}
}

func buildMemoryTool(_ *File, t named[toolSpec], b toolBuild) (tools.Tool, error) {
	return b.mem.Tool(t.Name), nil
}

func buildWebSearch(f *File, t named[toolSpec], b toolBuild) (tools.Tool, error) {
	s, env := t.Spec, b.env
	if s.Optional && env.leaves("web_search", "tool web_search") {
		return nil, nil
	}
	base, m1 := expandEnv(s.BaseURL, env.Getenv)
	key, m2 := expandEnv(s.APIKey, env.Getenv)
	if missing := append(m1, m2...); len(missing) > 0 {
		err := unsetError(f.path+": tools.web_search", missing)
		if env.Offline {
			return standInTool(t.Name), nil
		}
		if s.Optional {
			env.leftOut("web_search", fmt.Sprintf("tool web_search is left out: %s", err.Error()[len("workflows: "):]))
			return nil, nil
		}
		return nil, err
	}
	if to, ok := llm.KeyMayGoTo(env.Getenv, base, tools.DefaultTavilyURL); s.Provider == "tavily" && key != "" && base != "" && !ok && !env.Offline {
		return nil, fmt.Errorf("workflows: %s: tools.web_search.base_url: %s is not Tavily's endpoint, so its api_key is not sent to it: "+
			"a workflow file may send a key only to its provider; if you trust the endpoint, allow it: %s=%s", f.path, to, llm.EnvAllowEndpoints, to)
	}
	var p tools.SearchProvider
	if s.Provider == "tavily" {
		p = tools.NewTavily(tools.TavilyConfig{APIKey: key, BaseURL: base})
	} else {
		p = tools.NewSearXNG(tools.SearXNGConfig{BaseURL: base})
	}
	return tools.WebSearch(tools.WebSearchConfig{Provider: p, MaxResults: s.MaxResults}), nil
}
