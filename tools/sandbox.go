package tools

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// SandboxMode says whether a tool that runs code runs it in the sandbox.
type SandboxMode int

const (
	// SandboxRequired runs code only in the sandbox: where the sandbox
	// cannot be set up, the tool refuses with a *SandboxError and runs
	// nothing. It is the zero value.
	SandboxRequired SandboxMode = iota
	// SandboxOff runs code directly, as the user of this process, with
	// only its environment scrubbed: for code the user trusts, such as a
	// workflow of their own run from the command line.
	SandboxOff
)

// String returns "required" or "off".
func (m SandboxMode) String() string {
	switch m {
	case SandboxRequired:
		return "required"
	case SandboxOff:
		return "off"
	}
	return fmt.Sprintf("SandboxMode(%d)", int(m))
}

// SandboxConfig configures the sandbox of a tool that runs code. The zero
// value requires the sandbox, with no network and the default limits.
//
// The sandbox is bubblewrap (bwrap, the Debian package bubblewrap) on
// Linux: the code runs as nobody (uid and gid 65534; when this process
// runs as root, bwrap itself is started as nobody too) in its own user,
// PID, mount, IPC, UTS, cgroup and network namespaces, with no
// capabilities and no way to make more user namespaces. It sees /usr and
// the /bin and /lib links, a few files of /etc (the loader cache, time
// zones, certificates; name resolution with the network), a fresh /proc of
// its own processes, a minimal /dev, ReadOnly, and a writable /tmp of
// TempSize that is its working directory; everything else, this process's
// working directory, data and home among them, is absent. Its environment
// is empty but for PATH, HOME, LANG, TMPDIR, the Python I/O settings and
// the variables the operator lists. Its first process, pid 1, sets the
// limits before it starts the code, so every process of the sandbox runs
// under them. A seccomp filter denies the calls that reach other
// processes (ptrace, process_vm_*), memory the limits do not count
// (memfd_create, System V shared memory and message queues), kernel
// interfaces (io_uring, keyrings, bpf, perf, userfaultfd, mounts,
// namespaces, modules) and sockets other than AF_UNIX, AF_INET and
// AF_INET6; it kills a process that makes a call of another ABI. Files of
// /proc that show the host's kernel (its command line among them) read as
// empty. Ending the sandbox's first process ends every process in it,
// however it was started. The seccomp filter exists for amd64 and arm64;
// on other architectures the sandbox refuses.
type SandboxConfig struct {
	// Mode says whether the code runs in the sandbox (the default).
	Mode SandboxMode
	// Bwrap is the bubblewrap program; default "bwrap", looked up on PATH.
	Bwrap string
	// Network lets the code use the network; by default it has none, not
	// even a loopback interface of this host's.
	Network bool
	// ReadOnly are more host paths the code may read, at the same place:
	// an interpreter installed outside /usr, for example.
	ReadOnly []string
	// Limits bound what the code may use.
	Limits SandboxLimits
}

// SandboxLimits bound the resources of code in the sandbox, as rlimits
// set by the sandbox's pid 1 before the code starts (both soft and hard,
// so the code cannot raise them), and so inherited by every process of
// the sandbox. A zero field takes its default. They are per process, not
// per sandbox (there is no cgroup): the memory of a sandbox is at most
// Processes × Memory, plus twice TempSize in /tmp and /dev/shm, plus the
// kernel's buffers of its pipes and sockets (bounded by OpenFiles).
type SandboxLimits struct {
	// Memory is the address space of each process, in bytes; default
	// DefaultSandboxMemory. An allocation beyond it fails (a MemoryError
	// in Python).
	Memory int64
	// CPU is the CPU time of each process, rounded up to a second;
	// default the tool's timeout. A process that uses it up is killed.
	CPU time.Duration
	// Processes caps the processes and threads of the sandbox's user
	// running at once; default DefaultSandboxProcesses. A fork beyond it
	// fails.
	Processes int
	// FileSize is the largest file the code may write, in bytes; default
	// DefaultSandboxFileSize.
	FileSize int64
	// OpenFiles caps the descriptors each process may hold open at once;
	// default DefaultSandboxOpenFiles. It bounds the kernel memory a
	// process can hold in pipes and sockets.
	OpenFiles int
	// TempSize is the size of the writable /tmp, and of /dev/shm, in
	// bytes; default DefaultSandboxTempSize.
	TempSize int64
}

// Defaults of SandboxLimits.
const (
	DefaultSandboxMemory    = 1 << 30
	DefaultSandboxProcesses = 64
	DefaultSandboxFileSize  = 64 << 20
	DefaultSandboxTempSize  = 128 << 20
	DefaultSandboxOpenFiles = 256
)

// withDefaults fills the zero fields; timeout is the tool's.
func (l SandboxLimits) withDefaults(timeout time.Duration) SandboxLimits {
	if l.Memory <= 0 {
		l.Memory = DefaultSandboxMemory
	}
	if l.CPU <= 0 {
		l.CPU = timeout
	}
	l.CPU = max(time.Second, (l.CPU + time.Second - 1).Truncate(time.Second))
	if l.Processes <= 0 {
		l.Processes = DefaultSandboxProcesses
	}
	if l.FileSize <= 0 {
		l.FileSize = DefaultSandboxFileSize
	}
	if l.TempSize <= 0 {
		l.TempSize = DefaultSandboxTempSize
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = DefaultSandboxOpenFiles
	}
	return l
}

// ErrSandboxUnavailable is wrapped by every *SandboxError.
var ErrSandboxUnavailable = errors.New("tools: the sandbox cannot be set up")

// SandboxError reports code that was not run because the sandbox it
// requires could not be set up: bubblewrap is missing, or the system does
// not let it make the namespaces.
type SandboxError struct {
	Tool   string // the tool that refused: "python"
	Reason string // what went wrong, in the words of bubblewrap or the system
}

// Error implements error.
func (e *SandboxError) Error() string {
	return fmt.Sprintf("tools: %s: code not run: the sandbox cannot be set up: %s", e.Tool, e.Reason)
}

// Unwrap returns ErrSandboxUnavailable.
func (e *SandboxError) Unwrap() error { return ErrSandboxUnavailable }

// signalNote describes a process killed by signal n: "killed by signal
// 24: CPU time limit exceeded".
func signalNote(n int) string {
	return fmt.Sprintf("killed by signal %d: %s", n, syscall.Signal(n))
}
