package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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
	if b, ok := lookupBuiltinTool(t.Name); ok {
		return b.build(f, t, toolBuild{env: env, mem: mem, timeout: timeout})
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
