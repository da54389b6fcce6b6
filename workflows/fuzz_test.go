package workflows_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/workflows"
)

// noModel is the model of graphs compiled to be read: every call fails.
type noModel struct{}

func (noModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	return nil, context.Canceled
}

func (noModel) Call(context.Context, string, ...llms.CallOption) (string, error) {
	return "", context.Canceled
}

// FuzzLoad loads any bytes as a workflow file and compiles what loads,
// offline: neither may panic, and the limits on aliases, nesting,
// subgraph files and expressions keep each input within milliseconds and
// megabytes. The seeds are the crashers of issue 11 and the files of
// testdata.
//
//	go test -run '^$' -fuzz=FuzzLoad -fuzztime=5s ./workflows
func FuzzLoad(f *testing.F) {
	f.Add([]byte("a: &a [*a]"))
	f.Add(laughs(9, 9))
	f.Add(laughs(9, 13))
	f.Add([]byte(exprWorkflow("argument", `repeat(state.s, 1000000)`)))
	f.Add([]byte(exprWorkflow("template", `map(1..400000, state.s)`)))
	f.Add([]byte(subgraphFile("../../../../etc/passwd")))
	f.Add([]byte(subgraphFile("fuzz.yaml")))
	for _, pattern := range []string{"testdata/bad/*.yaml", "testdata/run/*.yaml", "*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	dir := f.TempDir()
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: noModel{}, Profile: llm.Profile{Model: "none"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := workflows.Parse(filepath.Join(dir, "fuzz.yaml"), data, workflows.WithUnregistered())
		if err != nil {
			return
		}
		_, _ = file.Compile(t.Context(), workflows.Env{Models: ms, Offline: true})
	})
}
