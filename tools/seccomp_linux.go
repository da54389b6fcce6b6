//go:build linux

package tools

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/net/bpf"
)

// The seccomp filter of the sandbox: a classic BPF program, made here for
// the architecture this program runs on, that bwrap installs (--seccomp)
// with no-new-privileges just before it starts the sandbox's first
// process, so that every process of the sandbox runs under it and none can
// remove it. It kills a process that makes a system call of another
// architecture or ABI (i386 on x86_64, x32, arm32 on arm64), answers EPERM
// to the calls of seccompDenied, EAFNOSUPPORT to sockets of families other
// than AF_UNIX, AF_INET and AF_INET6, EPERM to the terminal ioctls that
// inject input or reach the console, and to personality changes; it
// allows every other call.

// Actions of a seccomp filter, and the offsets of struct seccomp_data.
const (
	seccompKillProcess = 0x80000000
	seccompErrno       = 0x00050000 // | errno
	seccompAllow       = 0x7fff0000

	seccompNR   = 0  // int nr
	seccompArch = 4  // __u32 arch
	seccompArgs = 16 // __u64 args[6]; the low half of args[i] at 16+8i on little-endian machines
)

// Errnos the filter answers with.
const (
	errnoEPERM        = 1
	errnoEAFNOSUPPORT = 97
)

// seccompABI is one architecture the filter is made for.
type seccompABI struct {
	audit uint32 // AUDIT_ARCH_* of seccomp_data.arch
	// x32 is set where numbers with bit 30 set are another ABI (x86_64's
	// x32): such calls are killed.
	x32 bool
	// nr picks this architecture's number of a syscall.
	nr func(seccompSyscall) int
}

// seccompABIs are the architectures the sandbox runs on, by GOARCH. Both
// are little-endian.
var seccompABIs = map[string]seccompABI{
	"amd64": {audit: 0xc000003e, x32: true, nr: func(s seccompSyscall) int { return s.amd64 }},
	"arm64": {audit: 0xc00000b7, nr: func(s seccompSyscall) int { return s.arm64 }},
}

// seccompSyscall is a system call and its numbers; -1 where an
// architecture has no such call.
type seccompSyscall struct {
	name         string
	amd64, arm64 int
}

// seccompDenied are the calls code in the sandbox gets EPERM for: each
// reaches another process, a kernel interface that the code has no use
// for and that has been a way into the kernel, or memory that the
// sandbox's limits do not count.
var seccompDenied = []seccompSyscall{
	// Other processes: a process the code controlled this way (the
	// sandbox's init, say) would run outside the code's limits.
	{"ptrace", 101, 117},
	{"process_vm_readv", 310, 270},
	{"process_vm_writev", 311, 271},
	{"process_madvise", 440, 440},
	{"pidfd_getfd", 438, 438},
	{"kcmp", 312, 272},
	{"migrate_pages", 256, 238},
	{"move_pages", 279, 239},
	// Memory outside the address space, which RLIMIT_AS does not count:
	// memory files (each could grow to the file size limit) and System V
	// shared memory and message queues (which outlive their mappings).
	// Files in /tmp and /dev/shm are bounded by the size of those.
	{"memfd_create", 319, 279},
	{"memfd_secret", 447, 447},
	{"shmget", 29, 194},
	{"msgget", 68, 186},
	// Kernel interfaces.
	{"io_uring_setup", 425, 425},
	{"io_uring_enter", 426, 426},
	{"io_uring_register", 427, 427},
	{"keyctl", 250, 219},
	{"add_key", 248, 217},
	{"request_key", 249, 218},
	{"bpf", 321, 280},
	{"perf_event_open", 298, 241},
	{"userfaultfd", 323, 282},
	{"fanotify_init", 300, 262},
	{"name_to_handle_at", 303, 264},
	{"open_by_handle_at", 304, 265},
	{"lookup_dcookie", 212, 18},
	{"syslog", 103, 116},
	{"vhangup", 153, 58},
	// Namespaces and mounts.
	{"unshare", 272, 97},
	{"setns", 308, 268},
	{"mount", 165, 40},
	{"umount2", 166, 39},
	{"pivot_root", 155, 41},
	{"chroot", 161, 51},
	{"open_tree", 428, 428},
	{"open_tree_attr", 467, 467},
	{"move_mount", 429, 429},
	{"fsopen", 430, 430},
	{"fsconfig", 431, 431},
	{"fsmount", 432, 432},
	{"fspick", 433, 433},
	{"mount_setattr", 442, 442},
	// The system's administration: each needs a capability the code does
	// not have; denied before the kernel looks.
	{"kexec_load", 246, 104},
	{"kexec_file_load", 320, 294},
	{"init_module", 175, 105},
	{"finit_module", 313, 273},
	{"delete_module", 176, 106},
	{"reboot", 169, 142},
	{"swapon", 167, 224},
	{"swapoff", 168, 225},
	{"acct", 163, 89},
	{"quotactl", 179, 60},
	{"quotactl_fd", 443, 443},
	{"nfsservctl", 180, 42},
	{"settimeofday", 164, 170},
	{"clock_settime", 227, 112},
	{"clock_adjtime", 305, 266},
	// x86_64's own.
	{"iopl", 172, -1},
	{"ioperm", 173, -1},
	{"modify_ldt", 154, -1},
	{"uselib", 134, -1},
	{"ustat", 136, -1},
	{"sysfs", 139, -1},
	{"_sysctl", 156, -1},
	{"create_module", 174, -1},
	{"get_kernel_syms", 177, -1},
	{"query_module", 178, -1},
}

// The calls whose arguments the filter reads.
var (
	seccompSocket      = seccompSyscall{"socket", 41, 198}
	seccompSocketpair  = seccompSyscall{"socketpair", 53, 199}
	seccompIoctl       = seccompSyscall{"ioctl", 16, 29}
	seccompPersonality = seccompSyscall{"personality", 135, 92}
)

// Argument values the filter looks for.
var (
	// seccompFamilies are the socket families code may open: without the
	// network, AF_INET and AF_INET6 reach only the sandbox's own loopback.
	seccompFamilies = []uint32{1, 2, 10} // AF_UNIX, AF_INET, AF_INET6
	// seccompIoctls are the terminal ioctls denied: TIOCSTI pushes input
	// into a terminal, TIOCLINUX reaches the console.
	seccompIoctls = []uint32{0x5412, 0x541c}
	// seccompPersonalities are the personality calls allowed: PER_LINUX
	// and the query. Others turn off address randomization and the like.
	seccompPersonalities = []uint32{0, 0xffffffff}
)

// sandboxSeccomp is the filter, as bwrap reads it, for this program's
// architecture.
var sandboxSeccomp = sync.OnceValues(func() ([]byte, error) { return seccompFilter(runtime.GOARCH) })

// seccompFilter returns the filter for goarch as bwrap reads it: struct
// sock_filter after struct sock_filter, in the machine's byte order.
func seccompFilter(goarch string) ([]byte, error) {
	raw, err := seccompProgram(goarch)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		b = binary.NativeEndian.AppendUint16(b, r.Op)
		b = append(b, r.Jt, r.Jf)
		b = binary.NativeEndian.AppendUint32(b, r.K)
	}
	return b, nil
}

// seccompProgram assembles the filter for goarch.
func seccompProgram(goarch string) ([]bpf.RawInstruction, error) {
	abi, ok := seccompABIs[goarch]
	if !ok {
		return nil, fmt.Errorf("no seccomp filter for the architecture %s (only amd64 and arm64)", goarch)
	}
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: abi.audit, SkipTrue: 1},
		bpf.RetConstant{Val: seccompKillProcess},
		bpf.LoadAbsolute{Off: seccompNR, Size: 4},
	}
	if abi.x32 {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipFalse: 1},
			bpf.RetConstant{Val: seccompKillProcess})
	}
	for _, s := range seccompDenied {
		if nr := abi.nr(s); nr >= 0 {
			p = append(p,
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1},
				bpf.RetConstant{Val: seccompErrno | errnoEPERM})
		}
	}
	p = append(p, argIn(abi.nr(seccompSocket), 0, seccompFamilies, seccompAllow, seccompErrno|errnoEAFNOSUPPORT)...)
	p = append(p, argIn(abi.nr(seccompSocketpair), 0, seccompFamilies, seccompAllow, seccompErrno|errnoEAFNOSUPPORT)...)
	p = append(p, argIn(abi.nr(seccompIoctl), 1, seccompIoctls, seccompErrno|errnoEPERM, seccompAllow)...)
	p = append(p, argIn(abi.nr(seccompPersonality), 0, seccompPersonalities, seccompAllow, seccompErrno|errnoEPERM)...)
	p = append(p, bpf.RetConstant{Val: seccompAllow})
	return bpf.Assemble(p)
}

// argIn is the part of a filter that decides the call nr (the
// accumulator holds the number) by the low 32 bits of its argument arg:
// match when they are one of values, else other. Other calls go on past
// it with the accumulator unchanged.
func argIn(nr, arg int, values []uint32, match, other uint32) []bpf.Instruction {
	n := len(values)
	p := []bpf.Instruction{
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: uint8(n + 3)},
		bpf.LoadAbsolute{Off: uint32(seccompArgs + 8*arg), Size: 4},
	}
	for i, v := range values {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(n - i)})
	}
	return append(p, bpf.RetConstant{Val: other}, bpf.RetConstant{Val: match})
}
