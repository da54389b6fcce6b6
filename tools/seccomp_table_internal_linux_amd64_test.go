package tools

import (
	"maps"

	"golang.org/x/sys/unix"
)

// seccompHeaderNumbers are the numbers of x86_64's calls.
func seccompHeaderNumbers() map[string]int {
	m := maps.Clone(seccompCommonNumbers)
	maps.Copy(m, map[string]int{
		"iopl": unix.SYS_IOPL, "ioperm": unix.SYS_IOPERM, "modify_ldt": unix.SYS_MODIFY_LDT, "uselib": unix.SYS_USELIB,
		"ustat": unix.SYS_USTAT, "sysfs": unix.SYS_SYSFS, "_sysctl": unix.SYS__SYSCTL, "create_module": unix.SYS_CREATE_MODULE,
		"get_kernel_syms": unix.SYS_GET_KERNEL_SYMS, "query_module": unix.SYS_QUERY_MODULE,
	})
	return m
}
