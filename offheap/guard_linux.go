package offheap

import "syscall"

// GuardPagesAvailable reports whether [WithGuardPages] protects pages on this
// platform (true here: Linux has mprotect).
const GuardPagesAvailable = true

// sysProtect makes b, whole pages of a mapping, inaccessible: any access
// faults.
func sysProtect(b []byte) error { return syscall.Mprotect(b, syscall.PROT_NONE) }
