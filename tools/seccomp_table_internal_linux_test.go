//go:build linux && (amd64 || arm64)

package tools

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// TestSeccompTableMatchesTheKernelHeaders checks this architecture's
// numbers of the filter against golang.org/x/sys/unix, made from the
// kernel's headers (run on amd64 and on arm64 to check both columns).
func TestSeccompTableMatchesTheKernelHeaders(t *testing.T) {
	abi := seccompABIs[runtime.GOARCH]
	want := seccompHeaderNumbers()
	for _, s := range append(seccompDenied[:len(seccompDenied):len(seccompDenied)],
		seccompSocket, seccompSocketpair, seccompIoctl, seccompPersonality) {
		n, ok := want[s.name]
		if !ok {
			n = -1 // not a call of this architecture
		}
		assert.Equal(t, n, abi.nr(s), s.name)
	}
}

// seccompCommonNumbers are the numbers of the calls both architectures have.
var seccompCommonNumbers = map[string]int{
	"ptrace": unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV, "process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
	"process_madvise": unix.SYS_PROCESS_MADVISE, "pidfd_getfd": unix.SYS_PIDFD_GETFD, "kcmp": unix.SYS_KCMP,
	"migrate_pages": unix.SYS_MIGRATE_PAGES, "move_pages": unix.SYS_MOVE_PAGES,
	"memfd_create": unix.SYS_MEMFD_CREATE, "memfd_secret": unix.SYS_MEMFD_SECRET, "shmget": unix.SYS_SHMGET, "msgget": unix.SYS_MSGGET,
	"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER, "io_uring_register": unix.SYS_IO_URING_REGISTER,
	"keyctl": unix.SYS_KEYCTL, "add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY,
	"bpf": unix.SYS_BPF, "perf_event_open": unix.SYS_PERF_EVENT_OPEN, "userfaultfd": unix.SYS_USERFAULTFD,
	"fanotify_init": unix.SYS_FANOTIFY_INIT, "name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
	"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "lookup_dcookie": unix.SYS_LOOKUP_DCOOKIE,
	"syslog": unix.SYS_SYSLOG, "vhangup": unix.SYS_VHANGUP,
	"unshare": unix.SYS_UNSHARE, "setns": unix.SYS_SETNS, "mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2,
	"pivot_root": unix.SYS_PIVOT_ROOT, "chroot": unix.SYS_CHROOT, "open_tree": unix.SYS_OPEN_TREE,
	"open_tree_attr": unix.SYS_OPEN_TREE_ATTR, "move_mount": unix.SYS_MOVE_MOUNT, "fsopen": unix.SYS_FSOPEN,
	"fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT, "fspick": unix.SYS_FSPICK, "mount_setattr": unix.SYS_MOUNT_SETATTR,
	"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD, "init_module": unix.SYS_INIT_MODULE,
	"finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE, "reboot": unix.SYS_REBOOT,
	"swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF, "acct": unix.SYS_ACCT, "quotactl": unix.SYS_QUOTACTL,
	"quotactl_fd": unix.SYS_QUOTACTL_FD, "nfsservctl": unix.SYS_NFSSERVCTL, "settimeofday": unix.SYS_SETTIMEOFDAY,
	"clock_settime": unix.SYS_CLOCK_SETTIME, "clock_adjtime": unix.SYS_CLOCK_ADJTIME,
	"socket": unix.SYS_SOCKET, "socketpair": unix.SYS_SOCKETPAIR, "ioctl": unix.SYS_IOCTL, "personality": unix.SYS_PERSONALITY,
}
