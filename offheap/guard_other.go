//go:build !linux

package offheap

// GuardPages reports whether [WithGuardPages] protects pages on this
// platform (false here: the option is ignored).
const GuardPages = false

func sysProtect([]byte) error { return nil }
