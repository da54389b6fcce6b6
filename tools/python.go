package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Defaults of PythonConfig.
const (
	DefaultPythonTimeout   = 30 * time.Second
	DefaultPythonMaxOutput = 64 << 10
)

// pythonGrace is how much longer than its own timeout the python tool asks
// Run to wait, so that the tool's own report (with the output so far) wins.
const pythonGrace = 5 * time.Second

// pipeDrain bounds the wait for the output pipe to close after the process
// group is gone; only a process that left the group can hold it longer.
const pipeDrain = 2 * time.Second

// pythonEnv lists the variables passed through from the environment; every
// other variable (API keys among them) is withheld from the code.
var pythonEnv = []string{"PATH", "HOME", "LANG", "PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV"}

var pythonSchema = json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","minLength":1,"description":"Python 3 source code. Print what you need to see."}},"required":["code"],"additionalProperties":false}`)

// PythonConfig configures the python tool. The zero value is usable.
type PythonConfig struct {
	// Interpreter is the program run; default "python3", looked up on PATH.
	Interpreter string
	// Timeout bounds one run; default DefaultPythonTimeout.
	Timeout time.Duration
	// MaxOutput caps the output returned, in bytes; default DefaultPythonMaxOutput.
	MaxOutput int
	// Env adds "KEY=value" entries to the code's environment.
	Env []string
	// TempDir is where each run's directory is created; default os.TempDir().
	TempDir string
}

// Python returns the "python" tool: it writes the code to main.py in a fresh
// temporary directory, runs it there with the interpreter, and returns the
// exit code and the combined stdout and stderr (capped, with a note when
// truncated). The directory is removed afterwards.
//
// The code runs in its own process group. When it times out or the context
// ends, the whole group is killed; when it ends normally, processes it left
// running in the group are killed too. The environment holds only PATH,
// HOME, LANG, the Python selection variables and Env, plus TMPDIR pointing
// into the run's directory. This is isolation from accidents, not a sandbox:
// the code runs with the permissions of this process.
//
// A timeout is reported in the result text with the output so far, not as
// an error; the tool asks Run for a few seconds more than its own timeout.
func Python(cfg PythonConfig) TimeoutTool {
	if cfg.Interpreter == "" {
		cfg.Interpreter = "python3"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultPythonTimeout
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultPythonMaxOutput
	}
	return &pythonTool{cfg: cfg}
}

type pythonTool struct {
	cfg PythonConfig
}

func (p *pythonTool) Name() string { return "python" }

func (p *pythonTool) Description() string {
	return "Runs Python 3 code in a fresh, empty working directory and returns the exit code and " +
		"the combined stdout and stderr. Print every result you need; files are deleted after the run. " +
		fmt.Sprintf("Runs are limited to %s.", p.cfg.Timeout)
}

func (p *pythonTool) Schema() json.RawMessage { return pythonSchema }

func (p *pythonTool) Timeout() time.Duration { return p.cfg.Timeout + pythonGrace }

func (p *pythonTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(normalizeArgs(args), &in); err != nil {
		return "", &ArgumentError{Tool: "python", Schema: pythonSchema, Problems: []ArgumentProblem{{Message: err.Error()}}}
	}
	dir, err := os.MkdirTemp(p.cfg.TempDir, "coorflow-python-")
	if err != nil {
		return "", fmt.Errorf("tools: python: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(in.Code), 0o600); err != nil {
		return "", fmt.Errorf("tools: python: %w", err)
	}
	run, err := p.run(ctx, dir)
	if err != nil {
		return "", err
	}
	return run.text(p.cfg.Timeout), nil
}

// pythonRun is what one run produced.
type pythonRun struct {
	state    *os.ProcessState
	out      *cappedBuffer
	timedOut bool
}

// run starts the interpreter on main.py in dir and waits for it, the
// timeout or ctx, whichever comes first.
func (p *pythonTool) run(ctx context.Context, dir string) (*pythonRun, error) {
	cmd := exec.Command(p.cfg.Interpreter, "main.py")
	cmd.Dir = dir
	cmd.Env = p.env(dir)
	setProcessGroup(cmd)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	defer r.Close()
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close() // the children hold the write end now
	if err != nil {
		return nil, fmt.Errorf("tools: python: start %s: %w", p.cfg.Interpreter, err)
	}
	res := &pythonRun{out: newCappedBuffer(p.cfg.MaxOutput)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(res.out, r)
	}()
	res.timedOut = p.wait(ctx, cmd)
	drain := time.NewTimer(pipeDrain)
	defer drain.Stop()
	select {
	case <-copied:
	case <-drain.C:
		r.Close() // a process escaped the group and holds the pipe
		<-copied
	}
	if err := ctx.Err(); err != nil && !res.timedOut {
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	res.state = cmd.ProcessState
	return res, nil
}

// wait waits for the started cmd to exit, killing its process group at the
// timeout or when ctx ends, and in any case once it has exited, so that
// nothing it started lives on. It reports whether the timeout fired.
func (p *pythonTool) wait(ctx context.Context, cmd *exec.Cmd) (timedOut bool) {
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		_ = cmd.Wait() // the exit status is read from cmd.ProcessState
	}()
	timer := time.NewTimer(p.cfg.Timeout)
	defer timer.Stop()
	select {
	case <-waited:
	case <-timer.C:
		timedOut = true
		killProcessGroup(cmd)
		<-waited
	case <-ctx.Done():
		killProcessGroup(cmd)
		<-waited
	}
	killProcessGroup(cmd)
	return timedOut
}

// env builds the code's environment.
func (p *pythonTool) env(dir string) []string {
	env := make([]string, 0, len(pythonEnv)+len(p.cfg.Env)+5)
	for _, k := range pythonEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, "TMPDIR="+dir, "PYTHONUNBUFFERED=1", "PYTHONIOENCODING=utf-8", "PYTHONDONTWRITEBYTECODE=1")
	return append(env, p.cfg.Env...)
}

// text renders the run for the model.
func (r *pythonRun) text(timeout time.Duration) string {
	var b strings.Builder
	switch {
	case r.timedOut:
		fmt.Fprintf(&b, "timed out after %s: the process and its children were killed\n", timeout)
	case r.state.ExitCode() == -1:
		fmt.Fprintf(&b, "terminated: %s\n", r.state)
	default:
		fmt.Fprintf(&b, "exit code: %d\n", r.state.ExitCode())
	}
	out := r.out.String()
	if out == "" {
		b.WriteString("(no output)")
	} else {
		b.WriteString("output:\n" + out)
	}
	if r.out.Truncated() {
		fmt.Fprintf(&b, "\n[output truncated: showing the first %d of %d bytes]", r.out.Len(), r.out.Total())
	}
	return b.String()
}
