//go:build linux

package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// nobody is the user and group that code in the sandbox runs as.
const nobody = 65534

// sandboxEnv is the environment of code in the sandbox, before PassEnv
// and Env: safe values only, nothing of this process's environment.
var sandboxEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8"}

// systemLinks are the top-level directories that merged-/usr systems make
// links into /usr: linked the same way in the sandbox, or bound read-only
// where they are directories.
var systemLinks = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the files of /etc the code may read: the loader's cache,
// the alternatives links of Debian, time zones, certificates. etcNetwork
// are added when it has the network.
var (
	etcFiles   = []string{"/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime", "/etc/ssl", "/etc/ca-certificates"}
	etcNetwork = []string{"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf"}
)

// procHidden are the files of the sandbox's /proc that would show this
// host's kernel rather than the sandbox: each reads as empty (/dev/null
// is bound over it) where this host has it. The kernel's command line
// may hold secrets of the machine's set-up; the others show kernel
// memory, keys and timers of every process.
var procHidden = []string{"/proc/cmdline", "/proc/bootconfig", "/proc/config.gz", "/proc/kcore", "/proc/keys",
	"/proc/key-users", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats", "/proc/kallsyms"}

// The descriptors bwrap gets, after stdin, stdout and stderr.
const (
	readyFD   = 3 // the code's preamble writes one byte here once the limits are set
	infoFD    = 4 // bwrap writes the host pid of the sandbox's init here
	codeFD    = 5 // the source, copied to /tmp/main.py
	seccompFD = 6 // the seccomp filter bwrap installs
)

// preamble is the sandbox's first process, its pid 1 (bwrap runs it
// --as-pid-1, with no init of its own): it sets the rlimits (soft and
// hard) given as its arguments, makes itself undumpable, says so on
// readyFD, closes every descriptor but the standard ones and starts the
// interpreter on main.py as its child; then it reaps every process of the
// sandbox until that child ends, and ends with its status (128 plus the
// signal's number for a signal). Its end ends every other process of the
// sandbox. As a PID namespace's init it gets no signal from the code but
// those it handles, and it ignores SIGINT, Python's only one.
//
// Setting the limits from inside, after bwrap has made the namespaces,
// keeps them off bwrap itself and makes the process count that of the
// sandbox's own user; setting them in pid 1 before the code exists puts
// every process of the sandbox under them. Undumpable, pid 1 cannot be
// written to through /proc/1/mem by the code (the filter denies ptrace
// and process_vm_writev); an interpreter without ctypes leaves it
// dumpable, and under the same limits.
const preamble = `import os, resource, signal, sys
mem, cpu, nproc, fsize, nofile = map(int, sys.argv[1:6])
for r, soft, hard in ((resource.RLIMIT_AS, mem, mem), (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_NPROC, nproc, nproc), (resource.RLIMIT_FSIZE, fsize, fsize),
        (resource.RLIMIT_NOFILE, nofile, nofile), (resource.RLIMIT_CORE, 0, 0)):
    resource.setrlimit(r, (soft, hard))
try:
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except Exception:
    pass
os.write(3, b"1")
os.closerange(3, 1 << 20)
signal.signal(signal.SIGINT, signal.SIG_IGN)
code = os.fork()
if code == 0:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        os.execv(sys.executable, [sys.executable, "main.py"])
    except BaseException as e:
        os.write(2, ("cannot start the code: %s\n" % e).encode())
    os._exit(127)
while True:
    pid, status = os.wait()
    if pid == code:
        os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
`

// sandboxRun runs the code in bubblewrap.
type sandboxRun struct {
	cmd    *exec.Cmd
	code   *os.File // the staged source, already removed from its directory
	filter []byte   // the seccomp filter
	// ready and info are this side's ends of the pipes on readyFD and
	// infoFD; the child's ends are closed once it has started.
	ready, info *os.File
	readyc      chan bool        // whether the preamble said it was ready
	initc       chan *os.Process // the sandbox's init, when bwrap named it
	initOnce    sync.Once
	init        *os.Process    // set by initOnce
	goroutines  sync.WaitGroup // the readers of ready and info
	bwrap       string         // the program, for messages
}

func (p *pythonTool) sandboxed(code string) (codeRun, error) {
	sb := p.cfg.Sandbox
	if sb.Bwrap == "" {
		sb.Bwrap = "bwrap"
	}
	bwrap, err := exec.LookPath(sb.Bwrap)
	if err != nil {
		return nil, &SandboxError{Tool: "python", Reason: err.Error() + " (install bubblewrap: apt-get install bubblewrap)"}
	}
	filter, err := sandboxSeccomp()
	if err != nil {
		return nil, &SandboxError{Tool: "python", Reason: err.Error()}
	}
	src, err := stageSource(p.cfg.TempDir, code)
	if err != nil {
		return nil, err
	}
	s := &sandboxRun{code: src, filter: filter, bwrap: bwrap, readyc: make(chan bool, 1), initc: make(chan *os.Process, 1)}
	l := sb.Limits
	args := append(bwrapArgs(sb), "--", p.cfg.Interpreter, "-I", "-S", "-c", preamble,
		strconv.FormatInt(l.Memory, 10), strconv.Itoa(int(l.CPU/time.Second)), strconv.Itoa(l.Processes),
		strconv.FormatInt(l.FileSize, 10), strconv.Itoa(l.OpenFiles))
	s.cmd = exec.Command(bwrap, args...)
	s.cmd.Dir = "/"
	// The environment bwrap passes on: set here rather than with
	// --setenv, which would show the values in bwrap's command line.
	s.cmd.Env = p.env(sandboxEnv)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		// Root's files, and the root-owned files of /proc, would be the
		// sandbox user's own: run bwrap as nobody.
		s.cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
	}
	return s, nil
}

// stageSource writes code to a file in dir, opens it for reading and
// removes it: bwrap copies it into the sandbox from the descriptor.
func stageSource(dir, code string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "coorflow-python-*.py")
	if err != nil {
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(code); err != nil {
		f.Close()
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	return f, nil
}

// bwrapArgs are bwrap's options for sb, up to the command.
func bwrapArgs(sb SandboxConfig) []string {
	a := []string{"--unshare-all"}
	if sb.Network {
		a = append(a, "--share-net")
	}
	a = append(a, "--unshare-user", "--uid", strconv.Itoa(nobody), "--gid", strconv.Itoa(nobody), "--disable-userns",
		"--as-pid-1", "--seccomp", strconv.Itoa(seccompFD),
		"--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox",
		"--ro-bind", "/usr", "/usr")
	for _, d := range systemLinks {
		if target, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", target, d)
		} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--ro-bind", d, d)
		}
	}
	etc := etcFiles
	if sb.Network {
		etc = append(etc[:len(etc):len(etc)], etcNetwork...)
	}
	for _, f := range etc {
		a = append(a, "--ro-bind-try", f, f)
	}
	for _, p := range sb.ReadOnly {
		a = append(a, "--ro-bind", p, p)
	}
	a = append(a, "--proc", "/proc")
	for _, f := range procHidden {
		if _, err := os.Stat(f); err == nil {
			a = append(a, "--dev-bind", "/dev/null", f)
		}
	}
	size := strconv.FormatInt(sb.Limits.TempSize, 10)
	return append(a, "--dev", "/dev",
		"--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
		"--size", size, "--tmpfs", "/tmp", "--file", strconv.Itoa(codeFD), "/tmp/main.py", "--chdir", "/tmp",
		"--info-fd", strconv.Itoa(infoFD), "--remount-ro", "/")
}

func (s *sandboxRun) start(out *os.File) (*exec.Cmd, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		readyR.Close()
		readyW.Close()
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	filter, err := filterPipe(s.filter)
	if err != nil {
		readyR.Close()
		readyW.Close()
		infoR.Close()
		infoW.Close()
		return nil, fmt.Errorf("tools: python: %w", err)
	}
	s.ready, s.info = readyR, infoR
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.ExtraFiles = []*os.File{readyW, infoW, s.code, filter} // readyFD, infoFD, codeFD, seccompFD
	err = s.cmd.Start()
	readyW.Close()
	infoW.Close()
	filter.Close()
	if err != nil {
		readyR.Close()
		infoR.Close()
		return nil, &SandboxError{Tool: "python", Reason: fmt.Sprintf("start %s: %v", s.bwrap, err)}
	}
	s.goroutines.Add(2)
	go s.readReady()
	go s.readInit()
	return s.cmd, nil
}

// filterPipe returns the read end of a pipe that holds filter, whole:
// a filter is at most 4,096 instructions of 8 bytes, less than a pipe
// holds.
func filterPipe(filter []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.Write(filter)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// readReady reports whether the preamble wrote its byte: it did, or
// every process holding the pipe has ended.
func (s *sandboxRun) readReady() {
	defer s.goroutines.Done()
	var b [1]byte
	n, _ := s.ready.Read(b[:])
	s.readyc <- n == 1
}

// readInit reads the host pid of the sandbox's init from bwrap's info
// and holds it (as a pidfd): killing it kills every process in the
// sandbox. The pid is checked against the PID namespace bwrap reported,
// so that a pid reused after the sandbox ended is never signalled.
func (s *sandboxRun) readInit() {
	defer s.goroutines.Done()
	defer close(s.initc)
	var info struct {
		ChildPID     int    `json:"child-pid"`
		PIDNamespace uint64 `json:"pid-namespace"`
	}
	if err := json.NewDecoder(s.info).Decode(&info); err != nil || info.ChildPID <= 0 {
		return
	}
	proc, err := os.FindProcess(info.ChildPID)
	if err != nil {
		return
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", info.ChildPID))
	if err != nil || ns != fmt.Sprintf("pid:[%d]", info.PIDNamespace) {
		_ = proc.Release()
		return
	}
	s.initc <- proc
}

// kill kills the sandbox's init: the kernel then kills every process in
// the sandbox, and bwrap, which waits for its init, exits only once they
// are all gone. If bwrap has not named its init (it is stuck before
// making the sandbox), its process group is killed instead, and its
// init, if any, dies with it (--die-with-parent).
func (s *sandboxRun) kill() {
	s.initOnce.Do(func() {
		t := time.NewTimer(pipeDrain)
		defer t.Stop()
		select {
		case s.init = <-s.initc:
		case <-t.C:
		}
	})
	if s.init != nil {
		_ = s.init.Kill()
		return
	}
	killProcessGroup(s.cmd)
}

func (s *sandboxRun) finish(output string) error {
	ready := s.awaitReady()
	s.ready.Close()
	s.info.Close()
	s.goroutines.Wait()
	if s.init != nil {
		_ = s.init.Release()
	}
	for p := range s.initc { // named after kill stopped waiting
		_ = p.Release()
	}
	if ready {
		return nil
	}
	reason := output
	if reason == "" {
		reason = fmt.Sprintf("%s ended (%s) before the code started", s.bwrap, s.cmd.ProcessState)
	}
	return &SandboxError{Tool: "python", Reason: strings.TrimSpace(reason)}
}

// awaitReady waits for readReady's answer: bwrap has exited, so only a
// process that outlived it (a sandbox killed through its process group)
// can keep the pipe open, and not for long.
func (s *sandboxRun) awaitReady() bool {
	t := time.NewTimer(pipeDrain)
	defer t.Stop()
	select {
	case ready := <-s.readyc:
		return ready
	case <-t.C:
		return false
	}
}

func (s *sandboxRun) cleanup() { s.code.Close() }
