package skills_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/skills"
	"github.com/coorflow/coorflow/tools"
)

// pdfSkill is written the way Anthropic's published skills are: extra
// front-matter fields, Markdown instructions, and files beside SKILL.md.
const pdfSkill = `---
name: pdf-forms
description: Fill in PDF forms. Use when the user gives a PDF form and the values to put in it.
license: Apache-2.0
allowed-tools: python
metadata:
  version: "1.2"
---
# Filling PDF forms

1. Read reference/fields.md to learn the field names.
2. Run scripts/fill.py with the values.
`

func writeSkill(t *testing.T, dir, text string, files map[string]string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, skills.FileName), []byte(text), 0o644))
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

func TestLoadReadsAnAgentSkillsFolderAsItIs(t *testing.T) {
	dir := writeSkill(t, filepath.Join(t.TempDir(), "pdf-forms"), pdfSkill, map[string]string{"reference/fields.md": "name, date"})
	s, err := skills.Load(dir)
	require.NoError(t, err)
	assert.Equal(t, "pdf-forms", s.Name)
	assert.Equal(t, "Fill in PDF forms. Use when the user gives a PDF form and the values to put in it.", s.Description)
	assert.True(t, strings.HasPrefix(s.Instructions, "# Filling PDF forms"))
	assert.Equal(t, "Apache-2.0", s.Meta["license"])
	assert.Equal(t, "python", s.Meta["allowed-tools"])
	assert.NotContains(t, s.Meta, "name")
}

func TestABadSkillFileIsAnErrorAtItsLine(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"no front matter", "# Just Markdown\n", "SKILL.md:1: a skill file starts with front matter"},
		{"unclosed front matter", "---\nname: a\n", "SKILL.md:1: a skill file starts with front matter"},
		{"bad name", "---\ndescription: d\nname: Not_Valid\n---\nbody", `SKILL.md:3: name "Not_Valid": a skill's name is 1 to 64 lowercase letters`},
		{"no name", "---\ndescription: d\n---\n", "SKILL.md:2: the front matter has no name"},
		{"no description", "---\nname: a\n---\n", "SKILL.md:2: the front matter has no description"},
		{"description not text", "---\nname: a\ndescription: [1, 2]\n---\n", "SKILL.md:3: description must be text"},
		{"long description", "---\nname: a\ndescription: " + strings.Repeat("x", skills.MaxDescription+1) + "\n---\n", "SKILL.md:3: the description has more than 1024 characters"},
		{"bad yaml", "---\nname: [\n---\n", "SKILL.md:2: front matter:"},
		{"not a mapping", "---\n- a\n---\n", "SKILL.md:2: front matter must be a mapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := skills.Parse("x/SKILL.md", []byte(c.text))
			require.Error(t, err)
			assert.ErrorIs(t, err, skills.ErrInvalid)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestAnOversizedSkillFileIsRefusedWithoutReadingItAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big")
	writeSkill(t, dir, "---\nname: big\ndescription: d\n---\n"+strings.Repeat("x", skills.MaxSkillFile), nil)
	_, err := skills.Load(dir)
	require.ErrorIs(t, err, skills.ErrInvalid)
	assert.Contains(t, err.Error(), "more than the 262144 bytes")
}

func TestLoadDirsTakesSkillFoldersAndFoldersOfThem(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "lib", "pdf-forms"), pdfSkill, nil)
	writeSkill(t, filepath.Join(root, "lib", "csv-clean"), "---\nname: csv-clean\ndescription: Clean CSV files.\n---\nSteps.", nil)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "lib", "not-a-skill"), 0o755))
	writeSkill(t, filepath.Join(root, "one"), "---\nname: one\ndescription: The one.\n---\n", nil)

	set, err := skills.LoadDirs(filepath.Join(root, "lib"), filepath.Join(root, "one"))
	require.NoError(t, err)
	assert.Equal(t, []string{"csv-clean", "pdf-forms", "one"}, set.Names())

	_, err = skills.LoadDirs(filepath.Join(root, "lib"), filepath.Join(root, "lib", "pdf-forms"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `two skills are named "pdf-forms"`)

	_, err = skills.LoadDirs(filepath.Join(root, "lib", "not-a-skill"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has no SKILL.md, and no folder in it has one")

	writeSkill(t, filepath.Join(root, "lib", "broken"), "no front matter", nil)
	writeSkill(t, filepath.Join(root, "lib", "broken2"), "---\nname: X\ndescription: d\n---\n", nil)
	_, err = skills.LoadDirs(filepath.Join(root, "lib"))
	require.ErrorIs(t, err, skills.ErrInvalid)
	assert.Contains(t, err.Error(), filepath.Join("broken", "SKILL.md")+":1")
	assert.Contains(t, err.Error(), filepath.Join("broken2", "SKILL.md")+":2", "every broken skill is reported, not only the first")
}

func TestTheCatalogHoldsNamesAndDescriptionsOnly(t *testing.T) {
	dir := writeSkill(t, filepath.Join(t.TempDir(), "pdf-forms"), pdfSkill, nil)
	s, err := skills.Load(dir)
	require.NoError(t, err)
	set, err := skills.NewSet(s)
	require.NoError(t, err)
	cat := set.Catalog()
	assert.Contains(t, cat, "- pdf-forms: Fill in PDF forms.")
	assert.Contains(t, cat, "open_skill")
	assert.NotContains(t, cat, "Filling PDF forms", "instructions stay out of the prompt until the skill is opened")
	assert.Empty(t, (*skills.Set)(nil).Catalog())

	sub, unknown := set.Subset("pdf-forms", "nosuch", "pdf-forms")
	assert.Equal(t, []string{"pdf-forms"}, sub.Names())
	assert.Equal(t, []string{"nosuch"}, unknown)
}

func call(t *testing.T, reg *tools.Registry, name string, args any) tools.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return reg.Run(t.Context(), name, raw, tools.RunOptions{})
}

func skillTools(t *testing.T, dirs ...string) *tools.Registry {
	t.Helper()
	set, err := skills.LoadDirs(dirs...)
	require.NoError(t, err)
	reg := &tools.Registry{}
	for _, tl := range skills.Tools(set) {
		require.NoError(t, reg.Register(tl))
	}
	return reg
}

func TestOpenSkillGivesTheInstructionsAndTheFiles(t *testing.T) {
	dir := writeSkill(t, filepath.Join(t.TempDir(), "pdf-forms"), pdfSkill, map[string]string{
		"reference/fields.md": "name, date", "scripts/fill.py": "print('ok')",
	})
	reg := skillTools(t, dir)
	res := call(t, reg, skills.OpenTool, map[string]string{"name": "pdf-forms"})
	require.NoError(t, res.Err)
	assert.Contains(t, res.Output, "# Filling PDF forms")
	assert.Contains(t, res.Output, "- reference/fields.md (10 bytes)")
	assert.Contains(t, res.Output, "- scripts/fill.py (11 bytes)")
	assert.NotContains(t, res.Output, "- SKILL.md")

	res = call(t, reg, skills.ReadTool, map[string]string{"skill": "pdf-forms", "path": "reference/fields.md"})
	require.NoError(t, res.Err)
	assert.Equal(t, "name, date", res.Output)

	res = call(t, reg, skills.OpenTool, map[string]string{"name": "nosuch"})
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), `no skill "nosuch"; the skills are: pdf-forms`)
}

func TestReadSkillFileStaysInsideTheSkillsFolder(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(root, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("the server's secret"), 0o600))
	dir := writeSkill(t, filepath.Join(root, "s"), "---\nname: s\ndescription: d\n---\n", map[string]string{"ok.md": "fine"})
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "link.txt")))
	reg := skillTools(t, dir)

	for _, p := range []string{"../secret.txt", secret, "link.txt", "sub/../../secret.txt", "."} {
		res := call(t, reg, skills.ReadTool, map[string]string{"skill": "s", "path": p})
		require.Error(t, res.Err, p)
		assert.NotContains(t, res.Output, "the server's secret", p)
	}
	res := call(t, reg, skills.ReadTool, map[string]string{"skill": "s", "path": "../secret.txt"})
	assert.Contains(t, res.Err.Error(), "outside the folder of skill s")
}

func TestReadSkillFileBoundsWhatItReturns(t *testing.T) {
	dir := writeSkill(t, filepath.Join(t.TempDir(), "s"), "---\nname: s\ndescription: d\n---\n", map[string]string{
		"big.txt": strings.Repeat("a", skills.MaxFileRead+100),
		"bin.dat": "\x00\x01\x02",
	})
	reg := skillTools(t, dir)
	res := call(t, reg, skills.ReadTool, map[string]string{"skill": "s", "path": "big.txt"})
	require.NoError(t, res.Err)
	assert.Contains(t, res.Output, "the file has 65636 bytes; only the first 65536 are shown")
	assert.Less(t, len(res.Output), skills.MaxFileRead+200)

	res = call(t, reg, skills.ReadTool, map[string]string{"skill": "s", "path": "bin.dat"})
	require.NoError(t, res.Err)
	assert.Equal(t, "bin.dat is a binary file of 3 bytes; it cannot be shown as text.", res.Output)
}

func TestOpenSkillListsAtMostMaxFiles(t *testing.T) {
	files := map[string]string{}
	for i := range skills.MaxFiles + 5 {
		files[filepath.Join("many", strings.Repeat("f", 1)+string(rune('a'+i%26))+strings.Repeat("x", i/26)+".txt")] = "x"
	}
	dir := writeSkill(t, filepath.Join(t.TempDir(), "s"), "---\nname: s\ndescription: d\n---\n", files)
	res := call(t, skillTools(t, dir), skills.OpenTool, map[string]string{"name": "s"})
	require.NoError(t, res.Err)
	assert.Equal(t, skills.MaxFiles, strings.Count(res.Output, " bytes)\n"))
	assert.Contains(t, res.Output, "more files not listed")
}

func TestErrorsAreTyped(t *testing.T) {
	_, err := skills.Parse("p/SKILL.md", []byte("x"))
	var se *skills.Error
	require.True(t, errors.As(err, &se))
	assert.Equal(t, 1, se.Line)
	assert.Equal(t, "p/SKILL.md", se.Path)
}

func TestAHostileSkillFolderCostsABoundedWalk(t *testing.T) {
	dir := writeSkill(t, filepath.Join(t.TempDir(), "s"), "---\nname: s\ndescription: d\n---\n", map[string]string{"a.md": "x"})
	for i := range 4100 { // more entries than open_skill visits, and no files in them
		require.NoError(t, os.Mkdir(filepath.Join(dir, fmt.Sprintf("d%05d", i)), 0o755))
	}
	res := call(t, skillTools(t, dir), skills.OpenTool, map[string]string{"name": "s"})
	require.NoError(t, res.Err)
	assert.Contains(t, res.Output, "- a.md (1 bytes)")
	assert.Contains(t, res.Output, "more files not listed (the list stops at 200 files or 4000 entries)")
}

func TestASetHoldsAtMostMaxSkills(t *testing.T) {
	list := make([]skills.Skill, skills.MaxSkills+1)
	for i := range list {
		list[i] = skills.Skill{Name: fmt.Sprintf("s%d", i), Description: "d"}
	}
	_, err := skills.NewSet(list...)
	require.Error(t, err)
	assert.Equal(t, "skills: 201 skills, more than the 200 a set may hold", err.Error())

	root := t.TempDir()
	for i := range skills.MaxSkills + 1 {
		writeSkill(t, filepath.Join(root, fmt.Sprintf("s%d", i)), fmt.Sprintf("---\nname: s%d\ndescription: d\n---\n", i), nil)
	}
	_, err = skills.LoadDirs(root)
	require.Error(t, err)
	assert.Equal(t, "skills: "+root+" holds more than the 200 skills a set may hold", err.Error())
}
