package workflows

import (
	"fmt"
	"strings"
)

// DemoScriptDoc is where the demo script format is described.
const DemoScriptDoc = "docs/demo-scripts.md"

// demoScriptHint tells the user of a file that needs a real model how to
// run it offline instead: the demo.script key, the nodes the script must
// answer and where its format is described.
func (f *File) demoScriptHint() string {
	var names []string
	for _, n := range f.allNodes() {
		if n.Spec.Type == "llm" || n.Spec.Type == "react" {
			names = append(names, fmt.Sprintf("%q", n.Name))
		}
	}
	nodes := "its nodes"
	switch len(names) {
	case 0:
	case 1:
		nodes = "its node " + names[0]
	default:
		nodes = "its nodes " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return fmt.Sprintf("to run offline instead, add \"demo: {script: demo.yaml}\" to the file and write in demo.yaml the answers of %s (the format: %s)",
		nodes, DemoScriptDoc)
}
