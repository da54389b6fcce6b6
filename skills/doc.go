// Package skills loads agent skills and gives them to agents by
// progressive disclosure.
//
// A skill is a folder with a SKILL.md file: YAML front matter with the
// skill's name and description, then Markdown instructions, and any other
// files the instructions refer to (scripts, references, templates). It is
// the format of Anthropic's Agent Skills, so existing skills load as they
// are; front-matter fields other than name and description (license,
// allowed-tools, metadata, ...) are kept but not interpreted.
//
// An agent's prompt holds only the catalogue — each skill's name and
// description (Set.Catalog). The agent opens a skill when its task calls
// for it, with the open_skill tool (the instructions and the list of the
// folder's files), and reads a file of it with read_skill_file, confined
// to the skill's folder. Sizes are bounded everywhere: a skill folder is
// input from elsewhere.
package skills
