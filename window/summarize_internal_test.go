package window

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarizerPromptsFillTheirBound(t *testing.T) {
	tests := []struct {
		kind summaryKind
		lim  summaryLimits
		want string
	}{
		{summaryHistory, summaryLimits{MaxTokens: 800}, "a summary of at most 600 words"},
		{summaryOutput, summaryLimits{MaxBytes: 2000}, "a summary of at most 2000 characters"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			got, err := summarizerPrompt(tt.kind, tt.lim)
			require.NoError(t, err)
			assert.Contains(t, got, tt.want)
			assert.NotContains(t, got, "{{", "every parameter is filled in")
		})
	}
}

func TestSummarizerPromptOfAnUnknownKind(t *testing.T) {
	_, err := summarizerPrompt("poem", summaryLimits{MaxTokens: 10})
	assert.ErrorContains(t, err, "window: render poem summary prompt: open prompts/summarize_poem.tmpl: file does not exist")
}
