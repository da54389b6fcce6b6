package workflows

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/coorflow/coorflow/a2a"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
)

// a2aKey is the entry of the tools section that names remote A2A agents.
const a2aKey = "a2a"

// a2aAgentSpec is an agent of the tools.a2a section.
type a2aAgentSpec struct {
	URL       string `yaml:"url"`
	BearerEnv string `yaml:"bearer_env"`
	Timeout   string `yaml:"timeout"`
	Optional  bool   `yaml:"optional"`
}

var a2aAgentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// a2aAgents returns the agents of the tools.a2a section, in file order.
func (f *File) a2aAgents() []named[a2aAgentSpec] {
	n := f.doc.node("/tools/" + a2aKey)
	if n == nil {
		return nil
	}
	var out []named[a2aAgentSpec]
	for _, e := range mapping(n, "/tools/"+a2aKey) {
		var s a2aAgentSpec
		if err := e.node.Decode(&s); err != nil {
			continue // the schema reported it
		}
		out = append(out, named[a2aAgentSpec]{Name: e.Name, Spec: s, Key: e.Key, Ptr: e.Ptr})
	}
	return out
}

// a2aAgent reports whether name is an agent of the tools.a2a section.
func (f *File) a2aAgent(name string) bool {
	return slices.ContainsFunc(f.a2aAgents(), func(a named[a2aAgentSpec]) bool { return a.Name == name })
}

// checkA2A checks the agents of the tools.a2a section.
func (f *File) checkA2A(ps *problems) {
	for _, a := range f.a2aAgents() {
		l := f.doc.loc(a.Ptr)
		u, err := url.Parse(a.Spec.URL)
		switch {
		case !a2aAgentName.MatchString(a.Name):
			ps.at(l.key, l.path, "A2A agent %q: its name is the tool's: 1 to 64 letters, digits, '_' or '-'", a.Name)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			ps.at(l.key, l.path, "A2A agent %q: url must be the http or https URL of its agent card (or of the base it is under)", a.Name)
		case f.tools[a.Name].Name != "" || slices.Contains(f.mcpServerNames(), a.Name):
			ps.at(l.key, l.path, "A2A agent %q has the name of another tool of the file: rename it", a.Name)
		}
		if name := a.Spec.BearerEnv; name != "" {
			bl := f.doc.loc(a.Ptr + "/bearer_env")
			switch {
			case !envName.MatchString(name):
				ps.at(bl.val, bl.path, "bearer_env names the environment variable that holds the token; %q is not a variable name", name)
			case !f.opts.envAllowed(name):
				ps.at(bl.val, bl.path, "bearer_env names environment variable %s, %s", name, notAllowed(name))
			}
		}
	}
}

// addA2ATools reads the cards of the file's A2A agents and registers each
// as a tool (a2a.Tool), so that nodes, the builder of dynamic agents and
// tool nodes see them. Offline, they get stand-ins.
func (f *File) addA2ATools(ctx context.Context, env Env, reg *tools.Registry) error {
	for _, a := range f.a2aAgents() {
		if env.Offline {
			if _, err := reg.Get(a.Name); err != nil {
				_ = reg.Register(standInTool(a.Name))
			}
			continue
		}
		cfg := a2a.ToolConfig{Name: a.Name, URL: a.Spec.URL}
		cfg.Timeout, _ = time.ParseDuration(a.Spec.Timeout)
		leaveOut := func(err error) error {
			if a.Spec.Optional {
				env.Warn(fmt.Sprintf("A2A agent %s is left out: %s", a.Name, strings.TrimPrefix(err.Error(), "workflows: ")))
				return nil
			}
			return err
		}
		if name := a.Spec.BearerEnv; name != "" {
			if cfg.Bearer = env.Getenv(name); cfg.Bearer == "" {
				if err := leaveOut(unsetError(f.path+": tools.a2a."+a.Name+".bearer_env", []string{name})); err != nil {
					return err
				}
				continue
			}
			// The file chose the URL: like every key it names, the token
			// goes only where the operator allows.
			if to, ok := llm.KeyMayGoTo(env.Getenv, a.Spec.URL); !ok {
				return fmt.Errorf("workflows: %s: tools.a2a.%s.bearer_env: %s is not an endpoint the operator allows, so %s is not sent to it: "+
					"a workflow file may send a key only to its provider; if you trust the endpoint, allow it: %s=%s", f.path, a.Name, to, name, llm.EnvAllowEndpoints, to)
			}
		}
		t, err := a2a.NewTool(ctx, cfg)
		if err != nil {
			if err := leaveOut(fmt.Errorf("workflows: %s: tools.a2a.%s: %w", f.path, a.Name, err)); err != nil {
				return err
			}
			continue
		}
		if err := reg.Register(t); err != nil {
			return fmt.Errorf("workflows: %s: tools.a2a.%s: %w", f.path, a.Name, err)
		}
	}
	return nil
}
