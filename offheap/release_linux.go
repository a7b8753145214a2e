package offheap

import "syscall"

func sysRelease(b []byte) error { return syscall.Madvise(b, syscall.MADV_DONTNEED) }

// hugePages reports whether AllocHuge asks for transparent huge pages.
const hugePages = true

const hugePageSize = 2 << 20

func adviseHuge(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
