# Measures the limits of the sandbox from inside: each resource is taken
# until the sandbox refuses it. Prints one JSON object.
# Run by TestSandboxMeasuresItsLimits (tools/sandbox_measure_linux_test.go).
import errno, fcntl, json, os, resource, socket

MiB = 1 << 20
out = {}

# Memory of one process: 1 MiB at a time until MemoryError.
hog = []
try:
    while True:
        hog.append(bytearray(MiB))
except MemoryError:
    pass
out["allocated_mib"] = len(hog)
out["resident_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
del hog

# Processes: children that wait on a pipe, until fork fails.
r, w = os.pipe()
kids = []
try:
    while True:
        pid = os.fork()
        if pid == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    out["fork_error"] = errno.errorcode[e.errno]
out["forks"] = len(kids)
os.close(w)
os.close(r)
for k in kids:
    os.waitpid(k, 0)

# /tmp and /dev/shm: files of 1 MiB until the tmpfs is full.
for d in ("/tmp", "/dev/shm"):
    n = 0
    try:
        while True:
            with open("%s/fill%d" % (d, n), "wb") as f:
                f.write(b"x" * MiB)
            n += 1
    except OSError as e:
        out[d + "_error"] = e.strerror
    out[d + "_mib"] = n
    for i in range(n + 1):
        try:
            os.unlink("%s/fill%d" % (d, i))
        except OSError:
            pass

# One file: 1 MiB at a time until the write fails.
n = 0
try:
    with open("/tmp/big", "wb") as f:
        while True:
            f.write(b"x" * MiB)
            f.flush()
            n += 1
except OSError as e:
    out["file_error"] = e.strerror
out["file_mib"] = n
os.unlink("/tmp/big")

# Memory outside the address space.
try:
    os.memfd_create("hog")
    out["memfd"] = "created"
except OSError as e:
    out["memfd"] = e.strerror

# Kernel buffers: socket pairs, then pipes, filled until the descriptors
# run out.
def fill(make, send):
    ends, queued = [], 0
    try:
        while True:
            a, b = make()
            ends += [a, b]
            os.set_blocking(a if isinstance(a, int) else a.fileno(), False)
            try:
                while True:
                    queued += send(a, b"x" * 65536)
            except BlockingIOError:
                pass
    except OSError as e:
        if e.errno != errno.EMFILE:
            raise
    for e in ends:
        e.close() if hasattr(e, "close") else os.close(e)
    return len(ends) // 2, queued // MiB

def pipe():
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, 1031, MiB)  # F_SETPIPE_SZ
    except OSError:
        pass
    return w, r

out["socketpairs"], out["socket_queued_mib"] = fill(socket.socketpair, lambda a, b: a.send(b))
out["pipes"], out["pipe_queued_mib"] = fill(pipe, os.write)
out["open_files"] = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
out["seccomp"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith(("Seccomp:", "NoNewPrivs:", "CapEff:"))]
print(json.dumps(out, sort_keys=True))
