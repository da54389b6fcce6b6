package llm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/coorflow/coorflow/llm"
)

func TestStripThink(t *testing.T) {
	for in, want := range map[string]string{
		"<think>plan</think>\nAnswer.":                "Answer.",
		"A <think>x</think>B<think>y</think> C":       "A B C",
		"reasoning without an opening tag</think> Hi": "Hi",
		"Answer. <think>unclosed":                     "Answer.",
		"  plain  ":                                   "plain",
	} {
		assert.Equal(t, want, llm.StripThink(in), in)
	}
}
