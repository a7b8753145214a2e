//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package offheap

import (
	"errors"
	"unsafe"

	"github.com/memkit/memkit/internal/sysmem"
)

// MmapAvailable reports whether memory comes from mmap, outside the Go heap,
// or (false here: no mmap) is zeroed Go heap memory, so that every program
// builds.
const MmapAvailable = false

const pageSize = 4096

// sysAlloc serves a "mapping" from the Go heap, page-aligned like a real
// one. The table's pointer to it keeps it alive until Free. A size the
// system cannot serve is an error, as a refused mmap is, not the runtime's
// fatal "out of memory".
func sysAlloc(n int) ([]byte, error) {
	if !sysmem.Available(uint64(n) + pageSize) {
		return nil, errors.New("the system cannot serve it")
	}
	raw := make([]byte, n+pageSize)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & (pageSize - 1))
	return raw[off : off+n : off+n], nil
}

func sysFree([]byte) error { return nil }

func sysRelease([]byte) error { return nil }

const hugePages = false
const hugePageSize = pageSize

func adviseHuge([]byte) {}
