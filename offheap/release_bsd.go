//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package offheap

import "golang.org/x/sys/unix"

// sysRelease gives the pages of b back with madvise(MADV_FREE), not
// MADV_DONTNEED as on Linux. On these kernels MADV_DONTNEED is only a hint
// that the pages will not be needed soon: FreeBSD, DragonFly, NetBSD and
// OpenBSD lower their priority (FreeBSD's madvise(2): "decrease the
// in-memory priority") and macOS deactivates them, and all keep their
// contents and keep them resident. MADV_FREE is the call that lets the
// kernel discard the pages without writing them to swap, which is what the
// Go runtime's own scavenger uses on the BSDs. The kernel takes the pages
// lazily, when it needs memory: until then they may be read with their old
// contents, and once taken they read as zero. The package syscall has no
// madvise on these systems, hence golang.org/x/sys/unix.
func sysRelease(b []byte) error { return unix.Madvise(b, unix.MADV_FREE) }

const hugePages = false
const hugePageSize = 4096

func adviseHuge([]byte) {}
