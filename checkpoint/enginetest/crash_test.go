package enginetest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
)

var (
	effects = graph.NewKey("effects", graph.Append[string]())
	total   = graph.NewKey("total", graph.Sum[int]())
)

// sideEffect appends line to the file at path, through the journal.
func sideEffect(ctx context.Context, path, line string) error {
	_, err := graph.Do(ctx, "append "+line, func(context.Context) (bool, error) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return false, err
		}
		defer f.Close()
		_, err = fmt.Fprintln(f, line)
		return true, err
	})
	return err
}

// crashGraph: a -> {b1, b2, b3} -> c -> d. Every node appends a line to
// the effects file through graph.Do. With hang set, b2 stops after its
// side effect and tells the parent to kill it. The b tasks run one at a
// time, so b1 has finished — its result stored — and b3 has not started
// when the kill comes: a process killed between a side effect and its
// journal record would repeat it, which is Do's documented window.
func crashGraph(s graph.Saver, effectsFile string, hang func(ctx context.Context)) (*graph.Runnable, error) {
	g := graph.New("crash", effects, total)
	node := func(name string, n int) graph.NodeFunc {
		return func(ctx context.Context, st graph.State) (graph.Command, error) {
			if err := sideEffect(ctx, effectsFile, name); err != nil {
				return graph.Command{}, err
			}
			if name == "b2" && hang != nil {
				hang(ctx)
			}
			return graph.Update(graph.AppendTo(effects, name), total.Set(n)), nil
		}
	}
	for i, n := range []string{"a", "b1", "b2", "b3", "c", "d"} {
		g.AddNode(n, node(n, i+1))
	}
	g.AddEdge(graph.Start, "a")
	for _, b := range []string{"b1", "b2", "b3"} {
		g.AddEdge("a", b)
		g.AddEdge(b, "c")
	}
	g.AddEdge("c", "d")
	g.AddEdge("d", graph.End)
	return g.Compile(graph.WithSaver(s), graph.MaxConcurrency(1))
}

const crashEnv = "COORFLOW_CRASH_CHILD"

// TestMain runs the child process of TestKilledProcessResumes or
// TestTwoRealProcessesResumingOneThreadOneWins when the parent asks for
// it, and the tests otherwise.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		os.Exit(crashChild(dir))
	}
	if name := os.Getenv(writerEnv); name != "" {
		os.Exit(writerChild(name))
	}
	os.Exit(m.Run())
}

// crashChild runs the crash graph on the SQLite file in dir and prints its
// final state.
func crashChild(dir string) int {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "coorflow.db"))
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	var hang func(context.Context)
	if os.Getenv("COORFLOW_CRASH_HANG") != "" {
		hang = func(ctx context.Context) {
			fmt.Println("ready to be killed")
			<-ctx.Done() // until SIGKILL
		}
	}
	r, err := crashGraph(s, filepath.Join(dir, "effects.txt"), hang)
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	var input []graph.Write
	if os.Getenv("COORFLOW_CRASH_START") != "" {
		input = graph.Input()
	}
	res, err := r.Invoke(ctx, input, graph.Thread("crash"))
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	out, _ := json.Marshal(res.State)
	fmt.Println("final:", string(out))
	return 0
}

func child(t *testing.T, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{crashEnv + "=" + dir}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

func TestKilledProcessResumes(t *testing.T) {
	dir := t.TempDir()

	// First process: started, then killed with SIGKILL while b2 hangs after
	// its side effect (b1 and b3 may or may not have finished).
	first := child(t, dir, "COORFLOW_CRASH_START=1", "COORFLOW_CRASH_HANG=1")
	stdout, err := first.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, first.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready to be killed\n", line)
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	err = first.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, "signal: killed", exit.Error())

	// Second process: continues the thread to the end.
	second := child(t, dir)
	out, err := second.Output()
	require.NoError(t, err, string(out))
	final := strings.TrimPrefix(strings.TrimSpace(string(out)), "final: ")

	data, err := os.ReadFile(filepath.Join(dir, "effects.txt"))
	require.NoError(t, err)
	lines := strings.Fields(string(data))
	assert.ElementsMatch(t, []string{"a", "b1", "b2", "b3", "c", "d"}, lines, "every side effect happened exactly once")

	// The final state equals that of a run that was never interrupted.
	ref, err := crashGraph(memory.New(), filepath.Join(t.TempDir(), "ref.txt"), nil)
	require.NoError(t, err)
	want, err := ref.Invoke(t.Context(), graph.Input(), graph.Thread("ref"))
	require.NoError(t, err)
	wantJSON, err := json.Marshal(want.State)
	require.NoError(t, err)
	assert.JSONEq(t, string(wantJSON), final)
}
