package enginetest_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
)

// The environment of a writer child: its name, and where the store is.
const (
	writerEnv       = "COORFLOW_WRITER_CHILD"
	writerSQLite    = "COORFLOW_WRITER_SQLITE"
	writerPGSchema  = "COORFLOW_WRITER_PG_SCHEMA"
	writerThreadEnv = "COORFLOW_WRITER_THREAD"
)

// writerChild resumes the thread on the store its environment names. Once
// it has read the thread it prints "in step", and its nodes wait for a
// line on stdin; then it prints "final: <checkpoint>" or "error: <error>".
func writerChild(name string) int {
	ctx := context.Background()
	var s graph.Saver
	var err error
	if path := os.Getenv(writerSQLite); path != "" {
		s, err = sqlite.Open(ctx, path)
	} else {
		s, err = postgres.Open(ctx, pgtest.URL(), postgres.WithSchema(os.Getenv(writerPGSchema)))
	}
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	var once sync.Once
	goOn := make(chan struct{})
	hook := func(ctx context.Context, node string) {
		once.Do(func() {
			fmt.Println("in step")
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
			close(goOn)
		})
		<-goOn
	}
	r, err := newRelay(s, name, hook)
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	res, err := r.Invoke(ctx, nil, graph.Thread(os.Getenv(writerThreadEnv)))
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("final:", res.Checkpoint)
	return 0
}

// writer is a child process and the ends of its pipes.
type writer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startWriter(t *testing.T, name string, env ...string) *writer {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{writerEnv + "=" + name}, env...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	return &writer{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
}

// line reads the child's next line of output.
func (w *writer) line(t *testing.T) string {
	t.Helper()
	line, err := w.out.ReadString('\n')
	require.NoError(t, err, "child output so far: %q", line)
	return strings.TrimSuffix(line, "\n")
}

// TestTwoRealProcessesResumingOneThreadOneWins runs two processes on one
// SQLite file, or one PostgreSQL schema, that resume the same paused
// thread. Both have read it when the first goes on to finish the run; the
// second then fails with the conflict, and the thread has one line of
// history.
func TestTwoRealProcessesResumingOneThreadOneWins(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) (graph.Saver, []string)
	}{
		{"sqlite", func(t *testing.T) (graph.Saver, []string) {
			path := filepath.Join(t.TempDir(), "coorflow.db")
			s, err := sqlite.Open(t.Context(), path)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s, []string{writerSQLite + "=" + path}
		}},
		{"postgres", func(t *testing.T) (graph.Saver, []string) {
			pool := pgtest.Pool(t)
			schema := pgtest.Schema(t, pool, "enginetest_")
			s := postgres.New(pool, postgres.WithSchema(schema))
			return s, []string{writerPGSchema + "=" + schema}
		}},
	}
	for _, store := range stores {
		t.Run(store.name, func(t *testing.T) {
			s, env := store.open(t)
			const thread = "shared"
			paused := pausedThread(t, s, thread)
			env = append(env, writerThreadEnv+"="+thread)

			a, b := startWriter(t, "A", env...), startWriter(t, "B", env...)
			require.Equal(t, "in step", a.line(t))
			require.Equal(t, "in step", b.line(t))

			_, err := io.WriteString(a.stdin, "go\n")
			require.NoError(t, err)
			final, ok := strings.CutPrefix(a.line(t), "final: ")
			require.True(t, ok, "the first process finishes the run")
			require.NoError(t, a.cmd.Wait())

			_, err = io.WriteString(b.stdin, "go\n")
			require.NoError(t, err)
			assert.Equal(t, "error: "+conflictMessage("step 0", thread, paused, final), b.line(t))
			err = b.cmd.Wait()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			assert.Equal(t, 1, exit.ExitCode())

			assertOneLine(t, s, relayGraph(t, s, "reader", nil), thread, final, []string{"input", "A:a", "A:b", "A:c"})
		})
	}
}
