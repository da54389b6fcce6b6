package workflows_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/workflows"
)

// skillsWorkflow writes a workflow with a react node that has skills, and
// its skill folders, into a new directory; it returns the file's path.
func skillsWorkflow(t *testing.T, dir, skillsSection, nodeSkills string) string {
	t.Helper()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	write("skills/haiku/SKILL.md", "---\nname: haiku\ndescription: Write a haiku about a topic.\n---\n# Haiku\nThree lines: five, seven and five syllables. Read form.md.\n")
	write("skills/haiku/form.md", "5-7-5, no title.")
	write("skills/limerick/SKILL.md", "---\nname: limerick\ndescription: Write a limerick.\n---\nAABBA.\n")
	write("workflow.yaml", `apiVersion: coorflow/v1
name: poet
`+skillsSection+`
state:
  topic: {type: string}
  poem: {type: string}
input: topic
output: poem
nodes:
  poet:
    type: react
    prompt: "Write about {{ state.topic }}"
    output: poem
`+nodeSkills+`
edges:
  - {from: start, to: poet}
  - {from: poet, to: end}
`)
	return filepath.Join(dir, "workflow.yaml")
}

func TestAReactNodeWithSkillsSeesTheirCatalogueAndOpensThem(t *testing.T) {
	path := skillsWorkflow(t, t.TempDir(), "skills: [skills]", "    skills: [haiku]")
	f, err := workflows.Load(path)
	require.NoError(t, err)
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"poet": {
		{ToolCalls: []scripted.ToolCall{{Name: "open_skill", Arguments: `{"name": "haiku"}`}}},
		{ToolCalls: []scripted.ToolCall{{Name: "read_skill_file", Arguments: `{"skill": "haiku", "path": "form.md"}`}}},
		{Text: "autumn moon rises"},
	}}})
	r, err := f.Compile(t.Context(), workflows.Env{Models: staticModels(t, model)})
	require.NoError(t, err)
	in, err := f.Input(r, "topic", "the moon")
	require.NoError(t, err)
	out, err := r.Invoke(t.Context(), in, graph.Thread("t"))
	require.NoError(t, err)
	v, _ := out.State.Value("poem")
	assert.Equal(t, "autumn moon rises", v)

	calls := model.CallsFor("poet")
	require.Len(t, calls, 3)
	system := textOf(calls[0].Messages[0])
	assert.Contains(t, system, "- haiku: Write a haiku about a topic.")
	assert.NotContains(t, system, "limerick", "only the node's skills")
	assert.NotContains(t, system, "five, seven and five", "instructions stay out of the prompt until opened")
	var offered []string
	for _, tl := range calls[0].Options.Tools {
		offered = append(offered, tl.Function.Name)
	}
	assert.ElementsMatch(t, []string{"open_skill", "read_skill_file", "read_context"}, offered, "the skill tools, and the window's read_context")
	assert.Contains(t, lastText(calls[1].Messages), "Three lines: five, seven and five syllables")
	assert.Contains(t, lastText(calls[2].Messages), "5-7-5, no title.")
}

func textOf(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			b.WriteString(p.Text)
		case llms.ToolCallResponse:
			b.WriteString(p.Content)
		}
	}
	return b.String()
}

func lastText(msgs []llms.MessageContent) string { return textOf(msgs[len(msgs)-1]) }

func TestBadSkillsAreProblemsOfTheFile(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "s"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "s", "SKILL.md"), []byte("---\nname: s\ndescription: d\n---\n"), 0o644))

	dir := t.TempDir()
	path := skillsWorkflow(t, dir, "skills: [skills, broken, "+filepath.Join(outside, "s")+", nosuch]", "    skills: [haikus]")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "broken"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken", "SKILL.md"), []byte("---\nname: Broken Name\ndescription: d\n---\n"), 0o644))

	ps := problemsOf(t, path)
	require.Len(t, ps, 4, strings.Join(ps, "\n"))
	assert.Contains(t, ps[0], `workflow.yaml:3:18: skills[1]: skill folder broken: `+filepath.Join(dir, "broken", "SKILL.md")+`:2: name "Broken Name"`)
	assert.Contains(t, ps[1], "skills[2]: skill folder "+filepath.Join(outside, "s")+" is outside the workflow's directory")
	assert.Contains(t, ps[2], "skills[3]: skill folder nosuch cannot be read: no such file or directory")
	assert.Contains(t, ps[3], `nodes.poet.skills[0]: unknown skill "haikus" (did you mean "haiku"?)`)

	// Allowed by the program that loads the file, the outside folder loads.
	path = skillsWorkflow(t, t.TempDir(), "skills: [skills, "+filepath.Join(outside, "s")+"]", "    skills: [haiku, s]")
	_, err := workflows.Load(path, workflows.WithIncludeRoot(outside))
	require.NoError(t, err)
}

func TestAFileWithoutSkillFoldersSaysSoForAnUnknownSkill(t *testing.T) {
	path := skillsWorkflow(t, t.TempDir(), "", "    skills: [haiku]")
	ps := problemsOf(t, path)
	require.Len(t, ps, 1)
	assert.Contains(t, ps[0], `unknown skill "haiku" (the file names no skill folders: list them under skills)`)
}
