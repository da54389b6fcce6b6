package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/store/memories"
	"github.com/coorflow/coorflow/tools"
)

// buildTools makes the tools the file declares.
func (f *File) buildTools(env Env, mem *memories.Memories) (*tools.Registry, error) {
	reg := &tools.Registry{}
	for _, t := range f.spec.tools {
		tool, err := f.buildTool(t, env, mem)
		if err != nil {
			return nil, err
		}
		if tool == nil {
			continue
		}
		if err := reg.Register(tool); err != nil {
			return nil, fmt.Errorf("workflows: %s: tools.%s: %w", f.path, t.Name, err)
		}
	}
	return reg, nil
}

func (f *File) buildTool(t named[toolSpec], env Env, mem *memories.Memories) (tools.Tool, error) {
	timeout, _ := time.ParseDuration(t.Spec.Timeout)
	if f.opts.tools != nil && hasTool(f.opts.tools.Names(), t.Name) {
		return f.registeredTool(t.Name, timeout)
	}
	s := t.Spec
	switch t.Name {
	case mcpKey:
		return nil, nil // its servers' tools: addMCPTools
	case a2aKey:
		return nil, nil // its agents, each a tool: addA2ATools
	case "python":
		return pythonTool(env.Python, timeout, s.Interpreter), nil
	case "http_fetch":
		return tools.HTTPFetch(tools.HTTPFetchConfig{Timeout: timeout, AllowHosts: s.AllowHosts, DenyHosts: s.DenyHosts, AllowPrivate: s.AllowPrivate}), nil
	case "ask_human":
		return nodes.AskHumanTool(), nil
	case memories.RememberTool, memories.RecallTool:
		return mem.Tool(t.Name), nil
	case "web_search":
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
	if env.Offline {
		return standInTool(t.Name), nil
	}
	return nil, fmt.Errorf("workflows: %s: tools.%s: the tool is not registered: the program that runs the file registers it (workflows.WithTools)", f.path, t.Name)
}

// registeredTool is the tool registered WithTools as name.
func (f *File) registeredTool(name string, timeout time.Duration) (tools.Tool, error) {
	tool, err := f.opts.tools.Get(name)
	if err != nil {
		return nil, fmt.Errorf("workflows: %s: tools.%s: %w", f.path, name, err)
	}
	if timeout > 0 {
		return tools.WithTimeout(tool, timeout), nil
	}
	return tool, nil
}

// pythonTool is the python tool of cfg with the file's timeout and
// interpreter, or its disabled stand-in when cfg is nil.
func pythonTool(cfg *tools.PythonConfig, timeout time.Duration, interpreter string) tools.Tool {
	if cfg == nil {
		return tools.PythonDisabled()
	}
	c := *cfg
	if timeout > 0 {
		c.Timeout = timeout
	}
	if interpreter != "" {
		c.Interpreter = interpreter
	}
	return tools.Python(c)
}

// standInTool is a tool of a graph compiled offline.
func standInTool(name string) tools.Tool {
	return tools.Func(name, "Not available: the graph was compiled offline.", nil, func(context.Context, json.RawMessage) (string, error) {
		return "", fmt.Errorf("%w: tool %s", errOffline, name)
	})
}
