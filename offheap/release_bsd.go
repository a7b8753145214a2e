//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package offheap

// The syscall package has no madvise here: Release keeps the pages.
func sysRelease([]byte) error { return nil }

const hugePages = false
const hugePageSize = 4096

func adviseHuge([]byte) {}
