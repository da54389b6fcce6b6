//go:build linux

package tools

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/bpf"
)

// seccompVM loads the filter for goarch from the bytes bwrap would read.
func seccompVM(t *testing.T, goarch string) *bpf.VM {
	t.Helper()
	b, err := seccompFilter(goarch)
	require.NoError(t, err)
	require.Zero(t, len(b)%8)
	raw := make([]bpf.RawInstruction, len(b)/8)
	for i := range raw {
		r := b[8*i:]
		raw[i] = bpf.RawInstruction{Op: binary.NativeEndian.Uint16(r), Jt: r[2], Jf: r[3], K: binary.NativeEndian.Uint32(r[4:])}
	}
	insts, ok := bpf.Disassemble(raw)
	require.True(t, ok, "every instruction decodes")
	vm, err := bpf.NewVM(insts)
	require.NoError(t, err)
	return vm
}

// seccompData is a struct seccomp_data laid out for bpf.VM, which loads
// words big-endian: each field holds the value the kernel would load.
func seccompData(arch uint32, nr int, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))     // the low half, first on little-endian machines
		binary.BigEndian.PutUint32(b[20+8*i:], uint32(a>>32)) // the high half
	}
	return b
}

// TestSeccompFilterDecides runs the filter of each architecture on the
// calls it decides.
func TestSeccompFilterDecides(t *testing.T) {
	const (
		eperm        = seccompErrno | errnoEPERM
		eafnosupport = seccompErrno | errnoEAFNOSUPPORT
	)
	for goarch, abi := range seccompABIs {
		t.Run(goarch, func(t *testing.T) {
			vm := seccompVM(t, goarch)
			decide := func(arch uint32, nr int, args ...uint64) uint32 {
				t.Helper()
				v, err := vm.Run(seccompData(arch, nr, args...))
				require.NoError(t, err)
				return uint32(v)
			}
			nr := func(s seccompSyscall) int { return abi.nr(s) }
			getpid := map[string]int{"amd64": 39, "arm64": 172}[goarch]

			assert.Equal(t, uint32(seccompAllow), decide(abi.audit, getpid))
			// Another architecture's calls: i386 on x86_64, arm on arm64.
			for _, other := range []uint32{0x40000003, 0x40000028, 0xc000003e, 0xc00000b7} {
				if other != abi.audit {
					assert.Equal(t, uint32(seccompKillProcess), decide(other, getpid), "arch %#x", other)
				}
			}
			if abi.x32 {
				assert.Equal(t, uint32(seccompKillProcess), decide(abi.audit, 0x40000000|getpid), "x32")
				assert.Equal(t, uint32(seccompKillProcess), decide(abi.audit, 0x40000000|101), "x32 ptrace")
			}
			denied := 0
			for _, s := range seccompDenied {
				if n := nr(s); n >= 0 {
					assert.Equal(t, uint32(eperm), decide(abi.audit, n), s.name)
					denied++
				}
			}
			assert.Greater(t, denied, 50)

			for _, call := range []seccompSyscall{seccompSocket, seccompSocketpair} {
				for family, want := range map[uint64]uint32{
					1: seccompAllow, 2: seccompAllow, 10: seccompAllow, // AF_UNIX, AF_INET, AF_INET6
					0: eafnosupport, 16: eafnosupport, 17: eafnosupport, 38: eafnosupport, 40: eafnosupport, 44: eafnosupport,
					1<<32 | 16: eafnosupport, // the kernel reads an int
				} {
					assert.Equal(t, want, decide(abi.audit, nr(call), family, 1, 0), "%s(%#x)", call.name, family)
				}
			}
			for cmd, want := range map[uint64]uint32{
				0x5412: eperm, 0x541c: eperm, 1<<32 | 0x5412: eperm, // TIOCSTI, TIOCLINUX; the kernel reads an unsigned int
				0x5401: seccompAllow, 0x5413: seccompAllow, 0x541b: seccompAllow, // TCGETS, TIOCGWINSZ, FIONREAD
			} {
				assert.Equal(t, want, decide(abi.audit, nr(seccompIoctl), 1, cmd), "ioctl(%#x)", cmd)
			}
			for persona, want := range map[uint64]uint32{
				0: seccompAllow, 0xffffffff: seccompAllow, 0x0040000: eperm, 0x0008: eperm, 0x0400000: eperm,
			} {
				assert.Equal(t, want, decide(abi.audit, nr(seccompPersonality), persona), "personality(%#x)", persona)
			}
		})
	}
}

func TestSeccompFilterRefusesOtherArchitectures(t *testing.T) {
	_, err := seccompFilter("riscv64")
	assert.EqualError(t, err, "no seccomp filter for the architecture riscv64 (only amd64 and arm64)")
}

// TestSeccompFilterFitsTheKernel: at most 4,096 instructions (BPF_MAXINSNS),
// each jump within reach; bpf.Assemble checks the jumps.
func TestSeccompFilterFitsTheKernel(t *testing.T) {
	for goarch := range seccompABIs {
		raw, err := seccompProgram(goarch)
		require.NoError(t, err, goarch)
		assert.LessOrEqual(t, len(raw), 4096, goarch)
		t.Logf("%s: %d instructions", goarch, len(raw))
	}
}
