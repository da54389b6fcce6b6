// Package skills_test runs examples/skills offline, on its demo script:
// the builder gives the new agent a skill from the workflow's skill
// folders, the agent's prompt lists the skills by name and description
// only, and the agent opens the skill and reads its template from disk.
package skills_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/workflows"
)

func TestTheSkillsExampleGivesAnAgentASkillItOpensWhenItNeedsIt(t *testing.T) {
	f, err := workflows.Load("workflow.yaml")
	require.NoError(t, err)
	noKeys := func(string) string { return "" }
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: noKeys})
	require.NoError(t, err)
	require.True(t, ms.Demo, "no provider: the demo script")
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models, Getenv: noKeys, Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)

	var created []agentevent.Created
	var calls []string
	results := map[string]string{}
	var writerPrompts []string
	var final graph.State
	for ev, err := range r.Stream(t.Context(), graph.Input(nodes.Input.Set("Write the release notes of coorflow 0.3")), graph.Thread("t1")) {
		require.NoError(t, err)
		switch d := ev.Data.(type) {
		case agentevent.Created:
			created = append(created, d)
		case tools.CallEvent:
			calls = append(calls, d.Name)
		case tools.ResultEvent:
			results[d.Name] = d.Output
		case llm.ModelCall:
			if d.Agent == "release_writer" {
				writerPrompts = append(writerPrompts, string(d.Request))
			}
		}
		if ev.Kind == graph.EventRunEnd {
			final = ev.State
		}
	}
	require.Len(t, created, 1)
	assert.Equal(t, []string{"release-notes"}, created[0].Skills, "the builder chose the skill from the catalogue")
	assert.Equal(t, []string{"open_skill", "read_skill_file"}, calls)

	require.NotEmpty(t, writerPrompts)
	assert.Contains(t, writerPrompts[0], "- release-notes: Write release notes for a software release", "the prompt lists the skill")
	assert.NotContains(t, writerPrompts[0], "changelog-style", "only the skills the agent was given")
	assert.NotContains(t, writerPrompts[0], "Writing release notes", "instructions stay out until the skill is opened")

	assert.Contains(t, results["open_skill"], "# Writing release notes", "open_skill returns SKILL.md's instructions")
	assert.Contains(t, results["open_skill"], "- template.md (", "and lists the skill's files")
	assert.Contains(t, results["read_skill_file"], "## Upgrade notes", "read_skill_file reads the template from the skill's folder")
	assert.True(t, strings.HasPrefix(nodes.Answer.Get(final), "# coorflow 0.3"))
}
