package server

import (
	"context"
	"net/http"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// WorkflowInfo describes a workflow the server runs.
type WorkflowInfo struct {
	// Name is the name clients use; Graph the compiled graph's own name.
	Name     string        `json:"name"`
	Graph    string        `json:"graph"`
	Channels []ChannelInfo `json:"channels"`
	Nodes    []string      `json:"nodes"`
	// Mermaid is the graph as a Mermaid flowchart.
	Mermaid string `json:"mermaid"`
}

// ChannelInfo describes a channel of a workflow's state: the keys of a
// run's input.
type ChannelInfo struct {
	Name string `json:"name"`
	// Reducer is last, append, messages, merge, sum or custom.
	Reducer string `json:"reducer"`
	// Type is the Go type of the channel's value.
	Type string `json:"type"`
}

func newWorkflowView(name string, r *graph.Runnable) WorkflowInfo {
	w := WorkflowInfo{Name: name, Graph: r.Name(), Nodes: r.Nodes(), Mermaid: r.Mermaid()}
	for _, c := range r.Channels() {
		w.Channels = append(w.Channels, ChannelInfo{Name: c.Name(), Reducer: c.Reducer(), Type: c.ValueType().String()})
	}
	if w.Channels == nil {
		w.Channels = []ChannelInfo{}
	}
	if w.Nodes == nil {
		w.Nodes = []string{}
	}
	return w
}

// WorkflowList is the body of GET /v1/workflows.
type WorkflowList struct {
	Workflows []WorkflowInfo `json:"workflows"`
}

func (s *Server) handleListWorkflows(w http.ResponseWriter, r *http.Request) {
	out := WorkflowList{Workflows: make([]WorkflowInfo, 0, len(s.workflows))}
	for _, name := range sortedKeys(s.workflows) {
		out.Workflows = append(out.Workflows, s.workflows[name])
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleGetWorkflow(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("workflow")
	wf, ok := s.workflows[name]
	if !ok {
		writeError(w, unknownWorkflow(name))
		return
	}
	writeJSON(w, http.StatusOK, wf)
}

// Agents lists the dynamic agents an owner can use. The agent factory
// implements it; until then a Server without one lists none.
type Agents interface {
	// ListAgents returns the owner's agents.
	ListAgents(ctx context.Context, owner string) ([]AgentInfo, error)
}

// AgentInfo describes a built agent.
type AgentInfo struct {
	Name        string `json:"name"`
	Role        string `json:"role,omitempty"`
	Description string `json:"description,omitempty"`
	// Tier is the model tier the agent uses (basic, reasoning, vision,
	// code).
	Tier      string    `json:"tier,omitempty"`
	Tools     []string  `json:"tools,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// AgentList is the body of GET /v1/agents.
type AgentList struct {
	Agents []AgentInfo `json:"agents"`
}

func (s *Server) handleListAgents(w http.ResponseWriter, r *http.Request) {
	out := AgentList{Agents: []AgentInfo{}}
	if s.cfg.Agents != nil {
		agents, err := s.cfg.Agents.ListAgents(r.Context(), ownerFrom(r.Context()))
		if err != nil {
			writeError(w, s.internal(r, err))
			return
		}
		out.Agents = append(out.Agents, agents...)
	}
	writeJSON(w, http.StatusOK, out)
}
