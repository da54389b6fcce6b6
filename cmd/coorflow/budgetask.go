package main

import (
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
)

// oneBudgetQuestion reports whether the pending interrupts are all the
// same budget question: with on_exceed: ask, every agent the budget
// blocks in one step asks, but the answer — a new budget for the run, or
// stop — is one decision, so it is asked once and given to all of them.
func oneBudgetQuestion(ins []graph.InterruptInfo) bool {
	if len(ins) < 2 {
		return false
	}
	scope := ""
	for i, in := range ins {
		q, err := graph.InterruptPayload[llm.BudgetQuestion](in)
		if err != nil || q.Scope == "" || q.Question == "" || (i > 0 && q.Scope != scope) {
			return false
		}
		scope = q.Scope
	}
	return true
}

// questions returns the interrupts to show and answer: the first when
// they are one budget question, all of them otherwise.
func questions(ins []graph.InterruptInfo) []graph.InterruptInfo {
	if oneBudgetQuestion(ins) {
		return ins[:1]
	}
	return ins
}

// answerAll returns the resume option that gives v to every interrupt of
// ins.
func answerAll(ins []graph.InterruptInfo, v any) graph.Option {
	each := make(map[string]any, len(ins))
	for _, in := range ins {
		each[in.ID] = v
	}
	return graph.ResumeEach(each)
}
