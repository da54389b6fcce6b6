package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes/plan"
)

// ReviewRequest is the payload of the review interrupt.
type ReviewRequest struct {
	Plan *plan.Plan `json:"plan"`
	// Problems lists what was wrong with an edited plan sent back.
	Problems []string `json:"problems,omitempty"`
	Question string   `json:"question"`
}

// ReviewAnswer is how a reviewer answers: accept the plan, ask for changes
// in words (the planner makes a new plan), or send an edited plan (checked
// like a generated one). A plain string is read as accept when it is one
// of AcceptWords (trimmed, in any case, a final "." or "!" ignored), and
// as feedback otherwise.
type ReviewAnswer struct {
	Accept   bool       `json:"accept,omitempty"`
	Feedback string     `json:"feedback,omitempty"`
	Plan     *plan.Plan `json:"plan,omitempty"`
}

// ReviewConfig configures the human review node.
type ReviewConfig struct {
	// AutoAccept skips the question.
	AutoAccept bool
	// Next is the node that runs an accepted plan; Replan the planner.
	Next   string
	Replan string
	// Agents and AllowNewAgents check an edited plan like the planner does.
	Agents         AgentDirectory
	AllowNewAgents bool
	MaxSteps       int
}

// HumanReview returns the node that shows the plan to a person and waits
// (graph.Interrupt) for a ReviewAnswer.
func HumanReview(cfg ReviewConfig) (graph.NodeFunc, error) {
	if cfg.Next == "" || cfg.Replan == "" {
		return nil, fmt.Errorf("nodes: human review needs its Next and Replan nodes")
	}
	if cfg.Agents == nil {
		cfg.Agents = DefaultAgents
	}
	const question = "Accept this plan, say what to change, or send an edited plan."
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		plan := PlanKey.Get(s)
		if cfg.AutoAccept {
			return graph.Goto(cfg.Next), nil
		}
		req := ReviewRequest{Plan: plan, Question: question}
		for {
			raw, err := graph.Interrupt(ctx, req)
			if err != nil {
				return graph.Command{}, err
			}
			ans, err := readReview(raw)
			if err != nil {
				return graph.Command{}, err
			}
			switch {
			case ans.Plan != nil:
				probs, err := checkEdited(ctx, cfg, ans.Plan)
				if err != nil {
					return graph.Command{}, err
				}
				if len(probs) == 0 {
					return graph.Goto(cfg.Next, PlanKey.Set(ans.Plan)), nil
				}
				// Ask again, showing what is wrong with the edit.
				req = ReviewRequest{Plan: ans.Plan, Problems: probs, Question: "The edited plan cannot be run. " + question}
			case ans.Accept:
				return graph.Goto(cfg.Next), nil
			default:
				return graph.Goto(cfg.Replan, Feedback.Set(ans.Feedback)), nil
			}
		}
	}, nil
}

func checkEdited(ctx context.Context, cfg ReviewConfig, p *plan.Plan) ([]string, error) {
	cards, err := cfg.Agents.Cards(ctx)
	if err != nil {
		return nil, fmt.Errorf("nodes: review: list agents: %w", err)
	}
	known := map[string]bool{}
	for _, c := range cards {
		known[c.Name] = true
	}
	for i := range p.Steps {
		p.Steps[i].Result = nil
	}
	return validate(p, func(n string) bool { return known[n] }, cfg.MaxSteps, cfg.AllowNewAgents), nil
}

// AcceptWords are the plain answers that accept a plan.
var AcceptWords = []string{"accept", "accepted", "approve", "approved", "y", "yes", "ok", "okay", "lgtm"}

// IsAcceptance reports whether a plain answer accepts the plan: one of
// AcceptWords, trimmed, in any case, a final "." or "!" ignored. It is
// where acceptance is decided.
func IsAcceptance(answer string) bool {
	w := strings.ToLower(strings.TrimRight(strings.TrimSpace(answer), ".!"))
	return slices.Contains(AcceptWords, strings.TrimSpace(w))
}

// readReview interprets a resume value.
func readReview(raw any) (ReviewAnswer, error) {
	if s, ok := raw.(string); ok {
		switch {
		case IsAcceptance(s):
			return ReviewAnswer{Accept: true}, nil
		case strings.TrimSpace(s) == "":
			return ReviewAnswer{}, fmt.Errorf("nodes: review: an empty answer; send \"accept\", feedback, or an edited plan")
		}
		return ReviewAnswer{Feedback: strings.TrimSpace(s)}, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return ReviewAnswer{}, fmt.Errorf("nodes: review: %w", err)
	}
	var ans ReviewAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		return ReviewAnswer{}, fmt.Errorf("nodes: review: the answer %s is not accept, feedback or a plan: %w", b, err)
	}
	if !ans.Accept && ans.Plan == nil && strings.TrimSpace(ans.Feedback) == "" {
		return ReviewAnswer{}, fmt.Errorf("nodes: review: the answer %s has neither accept, feedback nor plan", b)
	}
	return ans, nil
}
