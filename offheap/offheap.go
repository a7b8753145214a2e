package offheap

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"github.com/memkit/memkit/stats"
)

// mapping is one live Alloc. The pointer is to memory outside the Go heap
// (the GC ignores it), or, for the heap fallback, keeps the buffer alive
// until Free as the kernel keeps a mapping.
type mapping struct {
	p     unsafe.Pointer // start of the mapping
	n     uintptr        // bytes mapped, a guard page included
	size  uintptr        // bytes usable from p: n less the guard page
	user  uintptr        // start of the slice Alloc returned: what Free takes
	owner *Allocator
}

func (m *mapping) start() uintptr { return uintptr(m.p) }

// whole returns the mapping as the slice sysAlloc returned.
func (m *mapping) whole() []byte { return unsafe.Slice((*byte)(m.p), m.n) }

// table is the process-wide registry of live mappings, sorted by start,
// with the counters ReadStats reports. Its lock also guards every
// Allocator's counters and quarantine.
var table struct {
	mu          sync.Mutex
	live        []mapping
	mapped      uint64
	quarantined uint64
	allocs      uint64
	frees       uint64
	failures    uint64
	releases    uint64
	badFrees    uint64
}

const (
	errDoubleFree = "memkit/offheap: double free or foreign memory"
	errNegative   = "memkit/offheap: negative size"
	errForeign    = "memkit/offheap: foreign memory"
)

// PageSize returns the granularity of mappings: Alloc rounds every request
// up to a multiple of it, and Release works on whole pages.
func PageSize() int { return pageSize }

// Alloc returns n bytes of zeroed memory from outside the Go heap (see
// [MmapAvailable]). The slice has length n and a capacity of n rounded up to a
// whole number of pages; its start is page-aligned. Alloc(0) maps one page.
//
// Alloc is safe for concurrent use. It is a system call (mmap) and costs a
// few microseconds; the memory is not counted by the GC, GOGC or GOMEMLIMIT.
// It panics with "memkit/offheap: negative size" if n < 0, and returns an
// error if the OS refuses the mapping. It is [Default]().Alloc: it has no
// guard page and no budget; an [Allocator] from [New] may have both.
func Alloc(n int) ([]byte, error) { return std.alloc(n, false) }

// AllocHuge is [Alloc] for memory that should be backed by transparent huge
// pages: on Linux it rounds n up to 2 MiB and advises the kernel
// (MADV_HUGEPAGE), which uses huge pages where it can; elsewhere it is Alloc.
// Huge pages cut TLB misses on large, randomly accessed buffers; they are
// best effort and need THP enabled ("madvise" or "always").
func AllocHuge(n int) ([]byte, error) { return std.alloc(n, true) }

// roundUp returns n rounded up to a multiple of the power of two m, and
// false if that overflows an int.
func roundUp(n, m int) (int, bool) {
	if n == 0 {
		return m, true
	}
	r := (n + m - 1) &^ (m - 1)
	return r, r >= n
}

// search returns the index of the first live mapping whose start is >= p.
// table.mu must be held.
func search(p uintptr) int {
	return sort.Search(len(table.live), func(i int) bool { return table.live[i].start() >= p })
}

// containing returns the index of the live mapping that holds the byte at
// p, or -1. table.mu must be held.
func containing(p uintptr) int {
	i := search(p+1) - 1
	if i >= 0 && p-table.live[i].start() < table.live[i].n {
		return i
	}
	return -1
}

// Free unmaps memory from [Alloc] or [AllocHuge]. b must start where Alloc's
// slice started; its length and capacity do not matter, the whole mapping is
// freed. After Free no slice of the mapping may be used: touching it faults.
//
// Free is safe for concurrent use; it is a system call (munmap). It panics
// with "memkit/offheap: double free or foreign memory" if b does not start a
// live mapping of this package (counting it in Stats.BadFrees first), and
// returns an error only if the OS refuses to unmap. It is
// [Default]().Free: a mapping from another [Allocator] is foreign to it.
func Free(b []byte) error { return std.Free(b) }

// Release lets the OS reclaim the whole pages inside b[:len(b)] while keeping
// them mapped: on Linux (madvise MADV_DONTNEED) the process RSS drops at
// once, and the pages read as zero when next touched, costing a page fault
// each. On macOS and the BSDs (madvise MADV_FREE) the kernel takes the pages
// when it needs memory rather than at once: a released page reads as zero
// once taken and may keep its old contents until then, so do not rely on
// either. Bytes of b on a page only partly inside b are kept. On platforms
// without mmap Release leaves the memory as it is. Use it for a large
// buffer that will be idle for a while but not freed.
//
// Release is safe for concurrent use with other Release and Alloc calls;
// the caller must not use the released bytes concurrently. It works on the
// mappings of every [Allocator]. It panics with "memkit/offheap: foreign
// memory" if b is not inside one live mapping of this package (releasing Go
// heap memory would corrupt the heap; a guard page is not part of its
// mapping here), and returns an error if the OS refuses.
func Release(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	start := uintptr(p)
	end := start + uintptr(len(b))
	table.mu.Lock()
	i := search(start + 1) // the first mapping starting after start
	ok := i > 0 && end <= table.live[i-1].start()+table.live[i-1].size && end > start
	if ok {
		table.releases++
		table.live[i-1].owner.releases++
	}
	table.mu.Unlock()
	if !ok {
		panic(errForeign)
	}
	ps := uintptr(pageSize)
	lo := (start + ps - 1) &^ (ps - 1)
	hi := end &^ (ps - 1)
	if lo >= hi {
		return nil
	}
	if err := sysRelease(unsafe.Slice((*byte)(unsafe.Add(p, lo-start)), hi-lo)); err != nil {
		return fmt.Errorf("memkit/offheap: madvise: %w", err)
	}
	return nil
}

// ReadStats fills *s with the totals of every live mapping of the process,
// from every [Allocator]: InUseBytes the bytes mapped for use (Alloc rounds
// to pages, and released pages still count; guard pages do not),
// ReservedBytes those and the bytes of freed mappings held in quarantine
// ([WithGuardPages]), LiveObjects the live mappings, Allocs and Frees the
// calls that succeeded, Failures the mappings the OS or a budget refused,
// Releases the Release calls, BadFrees the rejected Frees. Grows equals
// Allocs. It does not allocate and takes one short lock.
func ReadStats(s *stats.Stats) {
	s.Reset()
	table.mu.Lock()
	defer table.mu.Unlock()
	s.InUseBytes = table.mapped
	s.ReservedBytes = table.mapped + table.quarantined
	s.LiveObjects = uint64(len(table.live))
	s.Allocs = table.allocs
	s.Frees = table.frees
	s.Failures = table.failures
	s.Grows = table.allocs
	s.Releases = table.releases
	s.BadFrees = table.badFrees
}
