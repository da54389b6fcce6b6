package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Limits on what a skill folder may make us read or hold.
const (
	// MaxSkillFile is the largest SKILL.md accepted.
	MaxSkillFile = 256 << 10
	// MaxDescription is the longest description, in characters (the Agent
	// Skills format's own limit).
	MaxDescription = 1024
	// MaxFiles is how many files of a folder open_skill lists.
	MaxFiles = 200
	// MaxFileRead is how much of one file read_skill_file returns.
	MaxFileRead = 64 << 10
	// MaxSkills is how many skills a set holds: their catalogue is in
	// every prompt of the agents that have them.
	MaxSkills = 200
	// maxVisit is how many entries of a skill's folder open_skill walks
	// to find its files, folders included.
	maxVisit = 20 * MaxFiles
)

// FileName is the name of a skill's main file.
const FileName = "SKILL.md"

// ErrInvalid: a SKILL.md that cannot be used; the *Error says where and why.
var ErrInvalid = errors.New("skills: invalid skill")

// Error is a problem with a skill file, at a line of it (0 when the
// problem is the file as a whole).
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("skills: %s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("skills: %s: %s", e.Path, e.Msg)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }

// namePattern is the Agent Skills format's rule for names: lowercase
// letters, digits and single hyphens, at most 64 characters.
var namePattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Skill is a loaded skill: its front matter and instructions, and the
// folder its other files are in.
type Skill struct {
	// Name and Description are what an agent's prompt shows before the
	// skill is opened.
	Name        string
	Description string
	// Instructions is the Markdown body of SKILL.md.
	Instructions string
	// Dir is the skill's folder, with symbolic links resolved.
	Dir string
	// Meta holds the other front-matter fields as they were written.
	Meta map[string]any
}

// Load reads the skill in dir.
func Load(dir string) (Skill, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return Skill{}, fmt.Errorf("skills: %w", err)
	}
	path := filepath.Join(real, FileName)
	data, err := readCapped(path, MaxSkillFile)
	if err != nil {
		return Skill{}, err
	}
	s, err := Parse(path, data)
	if err != nil {
		return Skill{}, err
	}
	s.Dir = real
	return s, nil
}

// Parse reads the text of a SKILL.md; path names it in errors.
func Parse(path string, data []byte) (Skill, error) {
	if len(data) > MaxSkillFile {
		return Skill{}, &Error{Path: path, Msg: fmt.Sprintf("the file is %d bytes, more than the %d a skill may have", len(data), MaxSkillFile)}
	}
	if !utf8.Valid(data) {
		return Skill{}, &Error{Path: path, Msg: "the file is not UTF-8 text"}
	}
	front, body, ok := splitFrontMatter(data)
	if !ok {
		return Skill{}, &Error{Path: path, Line: 1, Msg: "a skill file starts with front matter between two lines of ---, with its name and description"}
	}
	var node yaml.Node
	if err := yaml.Unmarshal(front, &node); err != nil {
		return Skill{}, &Error{Path: path, Line: 2, Msg: "front matter: " + err.Error()}
	}
	var meta map[string]any
	if err := node.Decode(&meta); err != nil {
		return Skill{}, &Error{Path: path, Line: 2, Msg: "front matter must be a mapping of fields: " + err.Error()}
	}
	s := Skill{Instructions: strings.TrimSpace(string(body)), Meta: map[string]any{}}
	line := func(key string) int { return keyLine(&node, key) + 1 } // the front matter starts on line 2
	name, err := stringField(meta, "name")
	if err != nil {
		return Skill{}, &Error{Path: path, Line: line("name"), Msg: err.Error()}
	}
	switch {
	case name == "":
		return Skill{}, &Error{Path: path, Line: 2, Msg: "the front matter has no name"}
	case len(name) > 64 || !namePattern.MatchString(name):
		return Skill{}, &Error{Path: path, Line: line("name"), Msg: fmt.Sprintf("name %q: a skill's name is 1 to 64 lowercase letters, digits and single hyphens", name)}
	}
	desc, err := stringField(meta, "description")
	if err != nil {
		return Skill{}, &Error{Path: path, Line: line("description"), Msg: err.Error()}
	}
	desc = strings.TrimSpace(desc)
	switch {
	case desc == "":
		return Skill{}, &Error{Path: path, Line: 2, Msg: "the front matter has no description: it is what an agent reads to decide whether to open the skill"}
	case utf8.RuneCountInString(desc) > MaxDescription:
		return Skill{}, &Error{Path: path, Line: line("description"), Msg: fmt.Sprintf("the description has more than %d characters", MaxDescription)}
	}
	s.Name, s.Description = name, desc
	for k, v := range meta {
		if k != "name" && k != "description" {
			s.Meta[k] = v
		}
	}
	return s, nil
}

// splitFrontMatter splits a file that starts with a line "---" into the
// text up to the next line "---" and the rest.
func splitFrontMatter(data []byte) (front, body []byte, ok bool) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	first, rest, found := bytes.Cut(data, []byte("\n"))
	if !found || strings.TrimSpace(string(first)) != "---" {
		return nil, nil, false
	}
	for off := 0; off < len(rest); {
		end := bytes.IndexByte(rest[off:], '\n')
		next := len(rest)
		if end >= 0 {
			next = off + end + 1
		}
		if strings.TrimSpace(string(rest[off:next])) == "---" {
			return rest[:off], rest[next:], true
		}
		off = next
	}
	return nil, nil, false
}

func stringField(meta map[string]any, key string) (string, error) {
	v, ok := meta[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s must be text, not %T", key, v)
	}
	return s, nil
}

// keyLine is the line of key in a decoded front matter, relative to it.
func keyLine(doc *yaml.Node, key string) int {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == key {
			return doc.Content[i].Line
		}
	}
	return 1
}

// readCapped reads a file of at most max bytes.
func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	if int64(len(data)) > max {
		return nil, &Error{Path: path, Msg: fmt.Sprintf("the file is more than the %d bytes a skill file may have", max)}
	}
	return data, nil
}
