//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package offheap

import "unsafe"

// MmapAvailable reports whether memory comes from mmap, outside the Go heap,
// or (false here: no mmap) is zeroed Go heap memory, so that every program
// builds.
const MmapAvailable = false

const pageSize = 4096

// sysAlloc serves a "mapping" from the Go heap, page-aligned like a real
// one. The table's pointer to it keeps it alive until Free.
func sysAlloc(n int) ([]byte, error) {
	raw := make([]byte, n+pageSize)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & (pageSize - 1))
	return raw[off : off+n : off+n], nil
}

func sysFree([]byte) error { return nil }

func sysRelease([]byte) error { return nil }

const hugePages = false
const hugePageSize = pageSize

func adviseHuge([]byte) {}
