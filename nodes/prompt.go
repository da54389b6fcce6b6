package nodes

import (
	"embed"
	"strings"
)

//go:embed prompts/*.md
var promptFiles embed.FS

// prompt returns the embedded prompt name with {{key}} placeholders
// replaced.
func prompt(name string, vars map[string]string) string {
	b, err := promptFiles.ReadFile("prompts/" + name + ".md")
	if err != nil {
		panic("nodes: missing embedded prompt " + name) // a build error, caught by tests
	}
	return render(string(b), vars)
}

func render(text string, vars map[string]string) string {
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{{"+k+"}}", v)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}
