package tools

import (
	"context"
	"encoding/json"
	"errors"
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

// pipeDrain bounds the wait for the output pipe to close after the
// processes of a run are gone; only a process that escaped them can hold
// it longer.
const pipeDrain = 2 * time.Second

// pythonEnv lists the variables passed through from the environment when
// the sandbox is off; every other variable (API keys among them) is
// withheld from the code unless PythonConfig.PassEnv names it.
var pythonEnv = []string{"PATH", "HOME", "LANG", "PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV"}

// pythonIO are the settings of the interpreter's output, for every run.
var pythonIO = []string{"PYTHONUNBUFFERED=1", "PYTHONIOENCODING=utf-8", "PYTHONDONTWRITEBYTECODE=1"}

var pythonSchema = json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","minLength":1,"description":"Python 3 source code. Print what you need to see."}},"required":["code"],"additionalProperties":false}`)

// ErrCodeExecDisabled is returned by the stand-in of a tool that runs
// code, where code execution is off (PythonDisabled).
var ErrCodeExecDisabled = errors.New("tools: code execution is disabled on this server; the operator can enable it with --allow-code-exec")

// PythonConfig configures the python tool. The zero value runs python3 in
// the sandbox.
type PythonConfig struct {
	// Interpreter is the program run; default "python3", looked up on
	// PATH: this process's when the sandbox is off, the sandbox's
	// (/usr/local/bin, /usr/bin, /bin) in it.
	Interpreter string
	// Timeout bounds one run; default DefaultPythonTimeout.
	Timeout time.Duration
	// MaxOutput caps the output returned, in bytes; default DefaultPythonMaxOutput.
	MaxOutput int
	// Env adds "KEY=value" entries to the code's environment.
	Env []string
	// PassEnv names variables of this process's environment that the code
	// gets too. No other variable reaches it: API keys and tokens stay out.
	PassEnv []string
	// TempDir is where each run's directory (sandbox off) or its source
	// file, removed before the code starts (sandbox), is created; default
	// os.TempDir().
	TempDir string
	// Sandbox says how the code is confined; the zero value requires the
	// sandbox.
	Sandbox SandboxConfig
}

// Python returns the "python" tool: it runs the code as main.py in a
// fresh, empty working directory and returns the exit code and the
// combined stdout and stderr (capped, with a note when truncated).
//
// By default the code runs in the sandbox that cfg.Sandbox describes: it
// sees no file of this host but the system's, no process but its own, no
// network, and an environment of PATH, HOME, LANG, TMPDIR and Env;
// its memory, CPU time, processes and files are limited; when it times
// out or the context ends, every process in the sandbox is killed before
// Call returns. Where the sandbox cannot be set up, Call runs nothing and
// fails with a *SandboxError.
//
// With the sandbox off, the code runs as this process's user, in a
// temporary directory that is removed afterwards, in its own process
// group, which is killed at the timeout or when the context ends and once
// the code has exited. Its environment holds only PATH, HOME, LANG, the
// Python selection variables, PassEnv and Env, plus TMPDIR pointing into
// the run's directory. This is isolation from accidents, for trusted
// code: not a sandbox.
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
	cfg.Sandbox.Limits = cfg.Sandbox.Limits.withDefaults(cfg.Timeout)
	return &pythonTool{cfg: cfg, after: time.After}
}

// PythonDisabled returns a "python" tool for a program where code
// execution is off: it has the schema of Python's, and every call fails
// with ErrCodeExecDisabled, so that a model and the operator read why.
func PythonDisabled() Tool {
	return Func("python", "Disabled on this server: code execution is off. Do not call it.", pythonSchema,
		func(context.Context, json.RawMessage) (string, error) { return "", ErrCodeExecDisabled })
}

// CheckSandbox runs an empty program with the python tool of cfg and
// returns the *SandboxError when the sandbox cannot be set up, so that a
// program can say so when it starts rather than at the first call.
func CheckSandbox(ctx context.Context, cfg PythonConfig) error {
	_, err := Python(cfg).Call(ctx, json.RawMessage(`{"code":"pass"}`))
	return err
}

type pythonTool struct {
	cfg PythonConfig
	// after starts the timeout of a run (time.After; tests replace it).
	after func(time.Duration) <-chan time.Time
}

func (p *pythonTool) Name() string { return "python" }

// Description is the same with the sandbox on or off: it enters the
// prompts of agents, and a run replayed with the other mode should not
// differ for that alone.
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
	var (
		c   codeRun
		err error
	)
	if p.cfg.Sandbox.Mode == SandboxOff {
		c, err = p.direct(in.Code)
	} else {
		c, err = p.sandboxed(in.Code)
	}
	if err != nil {
		return "", err
	}
	defer c.cleanup()
	run, err := p.run(ctx, c)
	if err != nil {
		return "", err
	}
	return run.text(p.cfg.Timeout, p.cfg.Sandbox.Mode != SandboxOff), nil
}

// codeRun is one run of the code: directly or in the sandbox.
type codeRun interface {
	// start starts the code with its output going to out.
	start(out *os.File) (*exec.Cmd, error)
	// kill ends every process of the run.
	kill()
	// finish is called once the started command has exited and its
	// output is read; it reports code that never started because the
	// sandbox could not be set up, with the output as the reason.
	finish(output string) error
	// cleanup removes what the run left behind.
	cleanup()
}

// pythonRun is what one run produced.
type pythonRun struct {
	state    *os.ProcessState
	out      *cappedBuffer
	timedOut bool
}

// run starts c and waits for it, the timeout or ctx, whichever comes first.
func (p *pythonTool) run(ctx context.Context, c codeRun) (*pythonRun, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	defer r.Close()
	cmd, err := c.start(w)
	w.Close() // the children hold the write end now
	if err != nil {
		return nil, err
	}
	res := &pythonRun{out: newCappedBuffer(p.cfg.MaxOutput)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(res.out, r)
	}()
	res.timedOut = p.wait(ctx, cmd, c)
	drain := time.NewTimer(pipeDrain)
	defer drain.Stop()
	select {
	case <-copied:
	case <-drain.C:
		r.Close() // a process escaped and holds the pipe
		<-copied
	}
	notStarted := c.finish(res.out.String())
	if err := ctx.Err(); err != nil && !res.timedOut {
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	if notStarted != nil && !res.timedOut {
		return nil, notStarted
	}
	res.state = cmd.ProcessState
	return res, nil
}

// wait waits for the started cmd to exit, killing the run at the timeout
// or when ctx ends, and in any case once it has exited, so that nothing
// it started lives on. It reports whether the timeout fired.
func (p *pythonTool) wait(ctx context.Context, cmd *exec.Cmd, c codeRun) (timedOut bool) {
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		_ = cmd.Wait() // the exit status is read from cmd.ProcessState
	}()
	select {
	case <-waited:
	case <-p.after(p.cfg.Timeout):
		timedOut = true
		c.kill()
		<-waited
	case <-ctx.Done():
		c.kill()
		<-waited
	}
	c.kill()
	return timedOut
}

// env is the code's environment: base, the variables of PassEnv that are
// set, then Env.
func (p *pythonTool) env(base []string) []string {
	env := make([]string, 0, len(base)+len(pythonIO)+len(p.cfg.PassEnv)+len(p.cfg.Env))
	env = append(append(env, base...), pythonIO...)
	for _, k := range p.cfg.PassEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, p.cfg.Env...)
}

// directRun runs the code as this process's user, in a temporary
// directory, in its own process group.
type directRun struct {
	dir string
	cmd *exec.Cmd
}

func (p *pythonTool) direct(code string) (*directRun, error) {
	dir, err := os.MkdirTemp(p.cfg.TempDir, "coorflow-python-")
	if err != nil {
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(code), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	base := []string{"TMPDIR=" + dir}
	for _, k := range pythonEnv {
		if v, ok := os.LookupEnv(k); ok {
			base = append(base, k+"="+v)
		}
	}
	cmd := exec.Command(p.cfg.Interpreter, "main.py")
	cmd.Dir = dir
	cmd.Env = p.env(base)
	setProcessGroup(cmd)
	return &directRun{dir: dir, cmd: cmd}, nil
}

func (d *directRun) start(out *os.File) (*exec.Cmd, error) {
	d.cmd.Stdout, d.cmd.Stderr = out, out
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("tools: python: start %s: %w", d.cmd.Path, err)
	}
	return d.cmd, nil
}

func (d *directRun) kill()               { killProcessGroup(d.cmd) }
func (d *directRun) finish(string) error { return nil }
func (d *directRun) cleanup()            { os.RemoveAll(d.dir) }

// text renders the run for the model. In the sandbox, a process killed by
// a signal exits with 128 plus the signal's number.
func (r *pythonRun) text(timeout time.Duration, sandboxed bool) string {
	var b strings.Builder
	switch code := r.state.ExitCode(); {
	case r.timedOut:
		fmt.Fprintf(&b, "timed out after %s: the process and its children were killed\n", timeout)
	case code == -1:
		fmt.Fprintf(&b, "terminated: %s\n", r.state)
	case sandboxed && code > 128:
		fmt.Fprintf(&b, "exit code: %d (%s)\n", code, signalNote(code-128))
	default:
		fmt.Fprintf(&b, "exit code: %d\n", code)
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
