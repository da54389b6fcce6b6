package skills

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/coorflow/coorflow/tools"
)

// Tool names.
const (
	OpenTool = "open_skill"
	ReadTool = "read_skill_file"
)

type openArgs struct {
	Name string `json:"name" jsonschema:"required,description=The skill's name, as the Skills list gives it"`
}

type readArgs struct {
	Skill string `json:"skill" jsonschema:"required,description=The skill's name"`
	Path  string `json:"path" jsonschema:"required,description=The file's path inside the skill's folder, as open_skill lists it"`
}

// Tools returns the tools an agent with the skills of s uses: open_skill
// and read_skill_file. They know only the skills of s.
func Tools(s *Set) []tools.Tool {
	open := tools.Typed(OpenTool, "Open one of your skills: returns its instructions and the files of its folder.", nil,
		func(ctx context.Context, a openArgs) (string, error) {
			sk, err := s.lookup(a.Name)
			if err != nil {
				return "", err
			}
			return sk.open()
		})
	read := tools.Typed(ReadTool, "Read a file of a skill you opened, by its path inside the skill's folder.", nil,
		func(ctx context.Context, a readArgs) (string, error) {
			sk, err := s.lookup(a.Skill)
			if err != nil {
				return "", err
			}
			return sk.read(a.Path)
		})
	return []tools.Tool{open, read}
}

func (s *Set) lookup(name string) (Skill, error) {
	sk, ok := s.Get(name)
	if !ok {
		return Skill{}, fmt.Errorf("skills: no skill %q; the skills are: %s", name, strings.Join(s.Names(), ", "))
	}
	return sk, nil
}

// open is open_skill's answer: the instructions, then the folder's files.
func (sk Skill) open() (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Skill %s\n\n%s\n", sk.Name, sk.Instructions)
	files, more, err := sk.files()
	if err != nil {
		return "", err
	}
	if len(files) > 0 {
		fmt.Fprintf(&b, "\n## Files of the skill (read them with %s)\n", ReadTool)
		for _, f := range files {
			b.WriteString("- " + f + "\n")
		}
		if more {
			fmt.Fprintf(&b, "- … more files not listed (the list stops at %d files or %d entries)\n", MaxFiles, maxVisit)
		}
	}
	return b.String(), nil
}

// files lists the skill folder's regular files other than SKILL.md, with
// their sizes; more says the list stopped at MaxFiles.
func (sk Skill) files() (list []string, more bool, err error) {
	if sk.Dir == "" {
		return nil, false, nil
	}
	visited := 0
	err = filepath.WalkDir(sk.Dir, func(path string, d fs.DirEntry, err error) error {
		if visited++; visited > maxVisit {
			more = true
			return fs.SkipAll
		}
		if err != nil {
			return nil // an unreadable entry is left out
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(sk.Dir, path)
		if rel == FileName {
			return nil
		}
		if len(list) == MaxFiles {
			more = true
			return fs.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		list = append(list, fmt.Sprintf("%s (%d bytes)", filepath.ToSlash(rel), info.Size()))
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("skills: list the files of %s: %w", sk.Name, err)
	}
	return list, more, nil
}

// read is read_skill_file's answer: the file's text, at most MaxFileRead
// bytes of it. The path must stay inside the skill's folder once symbolic
// links are resolved.
func (sk Skill) read(rel string) (string, error) {
	if sk.Dir == "" {
		return "", fmt.Errorf("skills: skill %s has no folder", sk.Name)
	}
	if rel == "" || filepath.IsAbs(rel) {
		return "", fmt.Errorf("skills: %q is not a path inside the skill's folder", rel)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(sk.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return "", fmt.Errorf("skills: skill %s has no file %s", sk.Name, rel)
	}
	if r, err := filepath.Rel(sk.Dir, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("skills: %s is outside the folder of skill %s", rel, sk.Name)
	}
	f, err := os.Open(real)
	if err != nil {
		return "", fmt.Errorf("skills: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("skills: %w", err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("skills: %s of skill %s is not a file", rel, sk.Name)
	}
	buf, err := io.ReadAll(io.LimitReader(f, MaxFileRead))
	if err != nil {
		return "", fmt.Errorf("skills: read %s: %w", rel, err)
	}
	if bytes.IndexByte(buf, 0) >= 0 {
		return fmt.Sprintf("%s is a binary file of %d bytes; it cannot be shown as text.", rel, info.Size()), nil
	}
	text := strings.ToValidUTF8(string(buf), "\uFFFD")
	if info.Size() > int64(len(buf)) {
		text += fmt.Sprintf("\n… (the file has %d bytes; only the first %d are shown)", info.Size(), len(buf))
	}
	return text, nil
}

// Equip gives an agent the skills of s: it registers open_skill and
// read_skill_file in reg and returns prompt with the skills' catalogue
// (Prompt). An empty set leaves both as they are.
func (s *Set) Equip(prompt string, reg *tools.Registry) (string, error) {
	if s.Len() == 0 {
		return prompt, nil
	}
	for _, tl := range Tools(s) {
		if err := reg.Register(tl); err != nil {
			return "", fmt.Errorf("skills: %w", err)
		}
	}
	return s.Prompt(prompt), nil
}

// Prompt returns a system prompt with the catalogue of s after it.
func (s *Set) Prompt(system string) string {
	if s.Len() == 0 {
		return system
	}
	return strings.TrimRight(system, "\n") + "\n\n" + s.Catalog()
}
