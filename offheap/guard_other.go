//go:build !linux

package offheap

// GuardPagesAvailable reports whether [WithGuardPages] protects pages on this
// platform (false here: the option is ignored).
const GuardPagesAvailable = false

func sysProtect([]byte) error { return nil }
