package metaprompt_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/metaprompt"
)

// promptFor is a good prompt naming agent.
func promptFor(agent string) string {
	return strings.Replace(goodPrompt, "You estimate", "You, "+agent+", estimate", 1)
}

func TestConcurrentExpansionsOfDifferentBriefs(t *testing.T) {
	const n = 6
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	barrier := scripted.NewBarrier(n)
	agents := map[string][]scripted.Reply{}
	briefs := make([]metaprompt.Brief, n)
	for i := range briefs {
		b := researcher()
		b.Name = fmt.Sprintf("agent_%d", i)
		briefs[i] = b
		agents[agentLabel(b)] = []scripted.Reply{{Text: promptFor(b.Name), Wait: barrier.Wait}}
	}
	model := scripted.New(scripted.Script{Agents: agents})
	cache := newCache()
	e := expander(t, model, "gpt-4o", cache)

	results := make([]metaprompt.Prompt, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, b := range briefs {
		wg.Go(func() { results[i], errs[i] = e.Expand(ctx, b) })
	}
	wg.Wait()

	for i, b := range briefs {
		require.NoError(t, errs[i], b.Name)
		assert.Equal(t, promptFor(b.Name), results[i].Text)
	}
	assert.Equal(t, n, model.MaxInFlight(), "the expansions ran at the same time")
	assert.Len(t, cached(t, cache), n)
}
