//go:build linux

package tools_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/coorflow/coorflow/tools"
)

// The holes of issue 26, findings 1 to 3, each tried from inside the
// sandbox. Each test fails on the sandbox before the fix: pid 1 was
// bubblewrap's init, without the limits; there was no seccomp filter;
// the host's /proc/cmdline showed.

// okOutput is the result text of code that printed out and exited 0.
func okOutput(out string) string { return "exit code: 0\noutput:\n" + out }

// TestSandboxEveryProcessHasTheLimits: every process of the sandbox, its
// pid 1 among them, runs under the limits (finding 1: pid 1 had none, so
// code that took it over with ptrace used 1.58 GB and 100 processes).
func TestSandboxEveryProcessHasTheLimits(t *testing.T) {
	requireSandbox(t)
	limits := tools.SandboxLimits{Memory: 300 << 20, Processes: 20, FileSize: 3 << 20, OpenFiles: 100, CPU: 7 * time.Second}
	code := `import os, time
child = os.fork()
if child == 0:
    time.sleep(3600)
    os._exit(0)
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    limits = {l[:26].strip(): l[26:].split()[:2] for l in open("/proc/%d/limits" % pid)}
    print(pid, *(":".join(limits[name]) for name in ("Max address space", "Max processes", "Max cpu time", "Max file size", "Max open files", "Max core file size")))
os.kill(child, 9)
`
	res := runPython(t, tools.PythonConfig{Sandbox: tools.SandboxConfig{Limits: limits}}, code)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	want := "314572800:314572800 20:20 7:8 3145728:3145728 100:100 0:0"
	assert.Equal(t, okOutput("1 "+want+"\n2 "+want+"\n3 "+want+"\n"), res.Output,
		"pid 1 (the sandbox's init), the code (2) and its child (3) have the limits")
}

// TestSandboxCodeCannotControlAnotherProcess: the code can neither trace
// nor read or write the memory of another process of the sandbox, pid 1
// least of all (finding 1).
func TestSandboxCodeCannotControlAnotherProcess(t *testing.T) {
	requireSandbox(t)
	code := fmt.Sprintf(`import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
def result(r):
    return "ok" if r >= 0 else os.strerror(ctypes.get_errno())
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(b"secret")
child = os.fork()
if child == 0:
    time.sleep(3600)
    os._exit(0)
for name, pid in (("init", 1), ("child", child)):
    print(name, "ptrace seize:", result(libc.ptrace(0x4206, pid, None, None)))
    local, remote = iovec(ctypes.addressof(ctypes.create_string_buffer(6)), 6), iovec(ctypes.addressof(buf), 6)
    print(name, "process_vm_readv:", result(libc.syscall(%d, pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)))
    print(name, "process_vm_writev:", result(libc.syscall(%d, pid, ctypes.byref(remote), 1, ctypes.byref(local), 1, 0)))
try:
    open("/proc/1/mem", "r+b")
    print("init /proc/1/mem: opened")
except OSError as e:
    print("init /proc/1/mem:", e.strerror)
print("traceme:", result(libc.ptrace(0, 0, None, None)))
os.kill(child, 9)
`, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV)
	res := runPython(t, tools.PythonConfig{}, code)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, okOutput(
		"init ptrace seize: Operation not permitted\n"+
			"init process_vm_readv: Operation not permitted\n"+
			"init process_vm_writev: Operation not permitted\n"+
			"child ptrace seize: Operation not permitted\n"+
			"child process_vm_readv: Operation not permitted\n"+
			"child process_vm_writev: Operation not permitted\n"+
			"init /proc/1/mem: Permission denied\n"+
			"traceme: Operation not permitted\n"), res.Output)
}

// TestSandboxBoundsMemoryOutsideTheAddressSpace: memory the address-space
// limit does not count is denied (memory files, System V shared memory
// and message queues) or bounded by the size of /tmp and /dev/shm
// (finding 2: 1,280 MiB held in memfds by a process of 9 MiB).
func TestSandboxBoundsMemoryOutsideTheAddressSpace(t *testing.T) {
	requireSandbox(t)
	const mib = 1 << 20
	limits := tools.SandboxLimits{Memory: 128 * mib, FileSize: 32 * mib, TempSize: 16 * mib}
	code := fmt.Sprintf(`import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
mib = b"x" * (1 << 20)
held = []
try:
    while len(held) < 16:  # 16 memory files of 16 MiB: twice the memory limit
        fd = os.memfd_create("hog")
        for _ in range(16):
            os.write(fd, mib)
        held.append(fd)
    print("memfd: held", 16 * len(held), "MiB")
except OSError as e:
    print("memfd:", e.strerror, "after", 16 * len(held), "MiB")
r = libc.syscall(%d, 0, ctypes.c_size_t(1 << 20), 0o1600)
print("shmget:", "ok" if r >= 0 else os.strerror(ctypes.get_errno()))
r = libc.syscall(%d, 0, 0o1600)
print("msgget:", "ok" if r >= 0 else os.strerror(ctypes.get_errno()))
for d in ("/tmp", "/dev/shm"):
    n = 0
    try:
        with open(d + "/hog", "wb") as f:
            for _ in range(64):
                f.write(mib)
                f.flush()
                n += 1
    except OSError as e:
        print(d + ":", e.strerror, "after", n, "MiB")
`, unix.SYS_SHMGET, unix.SYS_MSGGET)
	res := runPython(t, tools.PythonConfig{Sandbox: tools.SandboxConfig{Limits: limits}}, code)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	lines := strings.Split(strings.TrimPrefix(res.Output, okOutput("")), "\n")
	require.Len(t, lines, 6, res.Output)
	assert.Equal(t, []string{
		"memfd: Operation not permitted after 0 MiB",
		"shmget: Operation not permitted",
		"msgget: Operation not permitted",
	}, lines[:3], res.Output)
	// A tmpfs of 16 MiB holds a file of 15 or 16 whole MiB, depending
	// on what else it holds (/tmp holds main.py).
	for i, d := range []string{"/tmp", "/dev/shm"} {
		var n int
		_, err := fmt.Sscanf(lines[3+i], d+": No space left on device after %d MiB", &n)
		require.NoError(t, err, "line %q", lines[3+i])
		assert.True(t, n == 15 || n == 16, "%s held %d MiB", d, n)
	}
}

// TestSandboxDeniesKernelInterfaces: the seccomp filter answers EPERM
// to the calls that reach other processes or kernel interfaces the code
// has no use for, EAFNOSUPPORT to sockets other than AF_UNIX, AF_INET and
// AF_INET6, and lets the rest through (finding 3). The numbers come
// from golang.org/x/sys/unix, not from the filter's own table.
func TestSandboxDeniesKernelInterfaces(t *testing.T) {
	requireSandbox(t)
	calls := []struct {
		name string
		nr   int
		args string
		want string
	}{
		{"ptrace", unix.SYS_PTRACE, "0x4206, 1, 0, 0", "EPERM"},
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV, "1, 0, 0, 0, 0, 0", "EPERM"},
		{"kcmp", unix.SYS_KCMP, "1, 1, 0, 0, 0", "EPERM"},
		{"pidfd_getfd", unix.SYS_PIDFD_GETFD, "0, 0, 0", "EPERM"},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, "1, 0", "EPERM"},
		{"io_uring_enter", unix.SYS_IO_URING_ENTER, "0, 0, 0, 0, 0, 0", "EPERM"},
		{"io_uring_register", unix.SYS_IO_URING_REGISTER, "0, 0, 0, 0", "EPERM"},
		{"keyctl", unix.SYS_KEYCTL, "0, -3, 0", "EPERM"}, // KEYCTL_GET_KEYRING_ID of the session keyring
		{"add_key", unix.SYS_ADD_KEY, "0, 0, 0, 0, 0", "EPERM"},
		{"request_key", unix.SYS_REQUEST_KEY, "0, 0, 0, 0", "EPERM"},
		{"bpf", unix.SYS_BPF, "0, 0, 0", "EPERM"},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, "0, 0, -1, -1, 0", "EPERM"},
		{"userfaultfd", unix.SYS_USERFAULTFD, "1", "EPERM"}, // UFFD_USER_MODE_ONLY
		{"memfd_create", unix.SYS_MEMFD_CREATE, "b'x', 0", "EPERM"},
		{"unshare", unix.SYS_UNSHARE, "0", "EPERM"},
		{"setns", unix.SYS_SETNS, "0, 0", "EPERM"},
		{"mount", unix.SYS_MOUNT, "0, 0, 0, 0, 0", "EPERM"},
		{"open_tree", unix.SYS_OPEN_TREE, "-100, b'/', 0", "EPERM"},
		{"fsopen", unix.SYS_FSOPEN, "b'tmpfs', 0", "EPERM"},
		{"personality ADDR_NO_RANDOMIZE", unix.SYS_PERSONALITY, "0x0040000", "EPERM"},
		{"personality query", unix.SYS_PERSONALITY, "0xffffffff", "ok"},
		{"ioctl TIOCSTI", unix.SYS_IOCTL, "1, 0x5412, b'x'", "EPERM"},
		{"socket AF_VSOCK", unix.SYS_SOCKET, "40, 1, 0", "EAFNOSUPPORT"},
		{"socket AF_NETLINK", unix.SYS_SOCKET, "16, 3, 0", "EAFNOSUPPORT"},
		{"socket AF_PACKET", unix.SYS_SOCKET, "17, 3, 0", "EAFNOSUPPORT"},
		{"socket AF_ALG", unix.SYS_SOCKET, "38, 5, 0", "EAFNOSUPPORT"},
		{"socketpair AF_NETLINK", unix.SYS_SOCKETPAIR, "16, 3, 0, 0", "EAFNOSUPPORT"},
		{"socket AF_UNIX", unix.SYS_SOCKET, "1, 1, 0", "ok"},
		{"socket AF_INET", unix.SYS_SOCKET, "2, 1, 0", "ok"},
		{"socket AF_INET6", unix.SYS_SOCKET, "10, 2, 0", "ok"},
		{"getpid", unix.SYS_GETPID, "", "ok"},
	}
	var code, want strings.Builder
	code.WriteString(`import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, nr, *args):
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = libc.syscall(ctypes.c_long(nr), *args)
    print(name + ":", "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
`)
	for _, c := range calls {
		fmt.Fprintf(&code, "call(%q, %d", c.name, c.nr)
		if c.args != "" {
			code.WriteString(", " + c.args)
		}
		code.WriteString(")\n")
		fmt.Fprintf(&want, "%s: %s\n", c.name, c.want)
	}
	res := runPython(t, tools.PythonConfig{}, code.String())
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, okOutput(want.String()), res.Output)
}

// TestSandboxKillsCallsOfAnotherABI: a call through the i386 entry
// (int 0x80) or with an x32 number kills the process: the filter knows
// the numbers of one ABI only (finding 3). x86_64 only: the code is
// machine code.
func TestSandboxKillsCallsOfAnotherABI(t *testing.T) {
	requireSandbox(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("the machine code of this test is x86_64's; other architectures are covered by TestSeccompFilterDecides")
	}
	for name, asm := range map[string]string{
		"i386": `b"\xb8\x14\x00\x00\x00\xcd\x80\xc3"`, // mov eax, 20 (getpid); int 0x80; ret
		"x32":  `b"\xb8\x27\x00\x00\x40\x0f\x05\xc3"`, // mov eax, 0x40000027 (x32 getpid); syscall; ret
	} {
		t.Run(name, func(t *testing.T) {
			code := `import ctypes, mmap
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(` + asm + `)
f = ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print("returned", f())
`
			res := runPython(t, tools.PythonConfig{}, code)
			require.Equal(t, tools.StatusOK, res.Status, res.Text())
			assert.Equal(t, "exit code: 159 (killed by signal 31: bad system call)\n(no output)", res.Output)
		})
	}
}

// TestSandboxRunsOrdinaryPython: what ordinary code uses passes the
// filter and the limits: threads, subprocesses, a multiprocessing pool
// (semaphores in /dev/shm), shared memory, asyncio, sockets.
func TestSandboxRunsOrdinaryPython(t *testing.T) {
	requireSandbox(t)
	code := `import asyncio, multiprocessing, socket, subprocess, sys, threading
from multiprocessing import shared_memory
async def main():
    await asyncio.sleep(0)
    return "asyncio ok"
print(asyncio.run(main()))
t = threading.Thread(target=print, args=("thread ok",))
t.start()
t.join()
print(subprocess.run([sys.executable, "-c", "print('subprocess ok')"], capture_output=True, text=True).stdout.strip())
with multiprocessing.Pool(2) as p:
    print("pool", p.map(abs, [-1, -2]))
shm = shared_memory.SharedMemory(create=True, size=1 << 20)
shm.buf[0] = 7
print("shared memory", shm.buf[0])
shm.close()
shm.unlink()
a, b = socket.socketpair()
a.sendall(b"x")
print("socketpair", b.recv(1))
ln = socket.socket()
ln.bind(("127.0.0.1", 0))
ln.listen()
c = socket.create_connection(ln.getsockname())
print("loopback", ln.accept()[1][0])
print("inet6", socket.socket(socket.AF_INET6).family.name)
`
	res := runPython(t, tools.PythonConfig{}, code)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, okOutput("asyncio ok\nthread ok\nsubprocess ok\npool [1, 2]\nshared memory 7\n"+
		"socketpair b'x'\nloopback 127.0.0.1\ninet6 AF_INET6\n"), res.Output)
}

// TestSandboxHidesTheHostsKernel: the host's kernel command line, and
// the other files of /proc that show the host's kernel rather than the
// sandbox, read as empty (finding 3).
func TestSandboxHidesTheHostsKernel(t *testing.T) {
	requireSandbox(t)
	host, err := os.ReadFile("/proc/cmdline")
	require.NoError(t, err)
	require.NotEmpty(t, strings.TrimSpace(string(host)), "this host's kernel has a command line")
	var files []string
	for _, f := range []string{"/proc/cmdline", "/proc/keys", "/proc/timer_list", "/proc/kallsyms"} {
		if _, err := os.Stat(f); err == nil {
			files = append(files, strconv.Quote(f))
		}
	}
	code := `for f in (` + strings.Join(files, ", ") + `,):
    print(f, len(open(f, "rb").read()))
`
	res := runPython(t, tools.PythonConfig{}, code)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	var want strings.Builder
	for _, f := range files {
		f, _ = strconv.Unquote(f)
		want.WriteString(f + " 0\n")
	}
	assert.Equal(t, okOutput(want.String()), res.Output)
}
