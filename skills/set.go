package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Set is a catalogue of skills with unique names, in the order given. The
// zero value and nil are empty sets.
type Set struct {
	list []Skill
}

// NewSet returns the set of list; two skills of one name are an error.
func NewSet(list ...Skill) (*Set, error) {
	if len(list) > MaxSkills {
		return nil, fmt.Errorf("skills: %d skills, more than the %d a set may hold", len(list), MaxSkills)
	}
	seen := map[string]string{}
	for _, s := range list {
		if dir, dup := seen[s.Name]; dup {
			return nil, fmt.Errorf("skills: two skills are named %q (in %s and %s)", s.Name, dir, s.Dir)
		}
		seen[s.Name] = s.Dir
	}
	return &Set{list: slices.Clone(list)}, nil
}

// LoadDirs loads the skills at paths: each path is a skill folder (it has
// a SKILL.md) or a folder of skill folders. Every problem is reported.
func LoadDirs(paths ...string) (*Set, error) {
	var list []Skill
	var errs []error
	for _, p := range paths {
		found, err := loadPath(p)
		list = append(list, found...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return NewSet(list...)
}

func loadPath(p string) ([]Skill, error) {
	if _, err := os.Stat(filepath.Join(p, FileName)); err == nil {
		s, err := Load(p)
		if err != nil {
			return nil, err
		}
		return []Skill{s}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	var list []Skill
	var errs []error
	if len(entries) > 20*MaxSkills {
		return nil, fmt.Errorf("skills: %s has %d entries; a folder of skills may have at most %d", p, len(entries), 20*MaxSkills)
	}
	for _, e := range entries {
		sub := filepath.Join(p, e.Name())
		if _, err := os.Stat(filepath.Join(sub, FileName)); err != nil {
			continue
		}
		s, err := Load(sub)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		list = append(list, s)
		if len(list) > MaxSkills {
			return nil, fmt.Errorf("skills: %s holds more than the %d skills a set may hold", p, MaxSkills)
		}
	}
	if len(list) == 0 && len(errs) == 0 {
		return nil, fmt.Errorf("skills: %s has no %s, and no folder in it has one", p, FileName)
	}
	return list, joinErrors(errs)
}

func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return fmt.Errorf("%s: %w", b.String(), ErrInvalid)
}

// Len is the number of skills.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.list)
}

// Names lists the skills' names, in order.
func (s *Set) Names() []string {
	if s.Len() == 0 {
		return nil
	}
	names := make([]string, len(s.list))
	for i, sk := range s.list {
		names[i] = sk.Name
	}
	return names
}

// Get returns the skill called name.
func (s *Set) Get(name string) (Skill, bool) {
	if s == nil {
		return Skill{}, false
	}
	for _, sk := range s.list {
		if sk.Name == name {
			return sk, true
		}
	}
	return Skill{}, false
}

// Subset returns the set of the named skills, in the order named, and the
// names it does not have.
func (s *Set) Subset(names ...string) (sub *Set, unknown []string) {
	sub = &Set{}
	for _, n := range names {
		sk, ok := s.Get(n)
		switch {
		case !ok:
			unknown = append(unknown, n)
		case !slices.ContainsFunc(sub.list, func(x Skill) bool { return x.Name == n }):
			sub.list = append(sub.list, sk)
		}
	}
	return sub, unknown
}

// Catalog is the part of a prompt that tells an agent which skills it
// has: names and descriptions only, and how to open one. It is empty for
// an empty set.
func (s *Set) Catalog() string {
	if s.Len() == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Skills\n\nYou have these skills. When your task matches a skill's description, call open_skill with its name before you act, and follow its instructions; read the files they mention with read_skill_file.\n\n")
	b.WriteString(s.List())
	return b.String()
}

// List is one line per skill, "- name: description".
func (s *Set) List() string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	for _, sk := range s.list {
		fmt.Fprintf(&b, "- %s: %s\n", sk.Name, oneLine(sk.Description))
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
