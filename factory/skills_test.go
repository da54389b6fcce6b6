package factory_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/skills"
	"github.com/coorflow/coorflow/tools"
)

func TestTheBuilderGivesOnlySkillsTheTeamHas(t *testing.T) {
	set, err := skills.NewSet(
		skills.Skill{Name: "release-notes", Description: "Write release notes."},
		skills.Skill{Name: "haiku", Description: "Write a haiku."},
	)
	require.NoError(t, err)
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"builder:writer": {{
		Text: `{"thought": "t", "description": "Writes.", "tier": "basic", "tools": [], "skills": ["release-notes", "teleport"], "brief": "b"}`,
	}}}})
	b := &factory.Builder{Model: model, Tools: &tools.Registry{}, Skills: set,
		WritePrompt: func(context.Context, factory.Agent, string) (string, error) { return "You write.", nil }}
	built, err := b.Build(t.Context(), plan.AgentSpec{Name: "writer", Role: "r", Capabilities: "c", Contribution: "c"}, "en-US")
	require.NoError(t, err)
	assert.Equal(t, []string{"release-notes"}, built.Agent.Skills)
	assert.Equal(t, []string{"teleport"}, built.DroppedSkills, "a skill the team does not have is dropped and reported")
	assert.Empty(t, built.Dropped)

	system := model.CallsFor("builder:writer")[0].Messages[0].Parts[0].(llms.TextContent).Text
	assert.Contains(t, system, "- release-notes: Write release notes.")
	assert.Contains(t, system, "- haiku: Write a haiku.")
}

func TestABuilderWithoutSkillsDoesNotMentionThem(t *testing.T) {
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"builder:writer": {{
		Text: `{"thought": "t", "description": "Writes.", "tier": "basic", "tools": [], "brief": "b"}`,
	}}}})
	b := &factory.Builder{Model: model, Tools: &tools.Registry{},
		WritePrompt: func(context.Context, factory.Agent, string) (string, error) { return "You write.", nil }}
	built, err := b.Build(t.Context(), plan.AgentSpec{Name: "writer", Role: "r", Capabilities: "c", Contribution: "c"}, "en-US")
	require.NoError(t, err)
	assert.Empty(t, built.Agent.Skills)
	assert.NotContains(t, model.CallsFor("builder:writer")[0].Messages[0].Parts[0].(llms.TextContent).Text, "skills")
}
