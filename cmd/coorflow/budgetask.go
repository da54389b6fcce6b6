package main

import (
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
)

// questions are the questions to put to the user for the pending
// interrupts ins: one for all of them when they are one budget question
// (llm.OneBudgetQuestion), else each.
func questions(ins []graph.InterruptInfo) []graph.InterruptInfo {
	if llm.OneBudgetQuestion(ins) {
		return ins[:1]
	}
	return ins
}
