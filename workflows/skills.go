package workflows

import (
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/skills"
)

// checkSkills loads the skill folders the file names, each confined to
// the workflow's directory tree like a subgraph file, into f.skills.
func (f *File) checkSkills(ps *problems) {
	var list []skills.Skill
	for i, name := range f.spec.Skills {
		l := f.doc.loc(fmt.Sprintf("/skills/%d", i))
		real, ok := f.reach(ps, l, "skill folder", name)
		if !ok {
			continue
		}
		set, err := skills.LoadDirs(real)
		if err != nil {
			ps.at(l.val, l.path, "skill folder %s: %v", name, skillErr(err))
			continue
		}
		for _, n := range set.Names() {
			sk, _ := set.Get(n)
			list = append(list, sk)
		}
	}
	set, err := skills.NewSet(list...)
	if err != nil {
		l := f.doc.loc("/skills")
		ps.at(l.val, l.path, "%v", skillErr(err))
		return
	}
	f.skills = set
}

// skillErr is a skills error without the package prefix, which the
// problem's own wording replaces.
func skillErr(err error) string { return strings.TrimPrefix(err.Error(), "skills: ") }

// skillRefs checks that the skills an agent at ptr names are the file's.
func (f *File) skillRefs(ps *problems, ptr string, names []string) {
	for i, s := range names {
		if _, ok := f.skills.Get(s); ok {
			continue
		}
		l := f.doc.loc(fmt.Sprintf("%s/skills/%d", ptr, i))
		hint := suggest(s, f.skills.Names(), "the file's skills are")
		if f.skills.Len() == 0 {
			hint = " (the file names no skill folders: list them under skills)"
		}
		ps.at(l.val, l.path, "unknown skill %q%s", s, hint)
	}
}

// skillsOf returns the file's skills called names.
func (f *File) skillsOf(names []string) *skills.Set {
	sub, _ := f.skills.Subset(names...)
	return sub
}
