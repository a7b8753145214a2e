package offheap

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"github.com/memkit/memkit/stats"
)

// mapping is one live Alloc: its start and mapped length. The pointer is to
// memory outside the Go heap (the GC ignores it), or, for the heap fallback,
// keeps the buffer alive until Free as the kernel keeps a mapping.
type mapping struct {
	p unsafe.Pointer
	n uintptr
}

func (m mapping) start() uintptr { return uintptr(m.p) }

// table is the process-wide registry of live mappings, sorted by start,
// with the counters ReadStats reports.
var table struct {
	mu       sync.Mutex
	live     []mapping
	mapped   uint64
	allocs   uint64
	frees    uint64
	failures uint64
	releases uint64
	badFrees uint64
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
// [Mapped]). The slice has length n and a capacity of n rounded up to a
// whole number of pages; its start is page-aligned. Alloc(0) maps one page.
//
// Alloc is safe for concurrent use. It is a system call (mmap) and costs a
// few microseconds; the memory is not counted by the GC, GOGC or GOMEMLIMIT.
// It panics with "memkit/offheap: negative size" if n < 0, and returns an
// error if the OS refuses the mapping.
func Alloc(n int) ([]byte, error) { return alloc(n, false) }

// AllocHuge is [Alloc] for memory that should be backed by transparent huge
// pages: on Linux it rounds n up to 2 MiB and advises the kernel
// (MADV_HUGEPAGE), which uses huge pages where it can; elsewhere it is Alloc.
// Huge pages cut TLB misses on large, randomly accessed buffers; they are
// best effort and need THP enabled ("madvise" or "always").
func AllocHuge(n int) ([]byte, error) { return alloc(n, true) }

func alloc(n int, huge bool) ([]byte, error) {
	if n < 0 {
		panic(errNegative)
	}
	size, ok := roundUp(n, pageSize)
	if huge && hugePages {
		size, ok = roundUp(size, hugePageSize)
	}
	if !ok {
		return nil, fmt.Errorf("offheap: size %d too large", n)
	}
	b, err := sysAlloc(size)
	if err != nil {
		table.mu.Lock()
		table.failures++
		table.mu.Unlock()
		return nil, fmt.Errorf("offheap: mmap %d bytes: %w", size, err)
	}
	if huge && hugePages {
		adviseHuge(b) // best effort: the mapping works without it
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	table.mu.Lock()
	i := search(uintptr(p))
	table.live = append(table.live, mapping{})
	copy(table.live[i+1:], table.live[i:])
	table.live[i] = mapping{p, uintptr(size)}
	table.mapped += uint64(size)
	table.allocs++
	table.mu.Unlock()
	return b[:n:size], nil
}

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

// Free unmaps memory from [Alloc] or [AllocHuge]. b must start where Alloc's
// slice started; its length and capacity do not matter, the whole mapping is
// freed. After Free no slice of the mapping may be used: touching it faults.
//
// Free is safe for concurrent use; it is a system call (munmap). It panics
// with "memkit/offheap: double free or foreign memory" if b does not start a
// live mapping of this package (counting it in Stats.BadFrees first), and
// returns an error only if the OS refuses to unmap.
func Free(b []byte) error {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)])))
	table.mu.Lock()
	i := search(start)
	if i == len(table.live) || table.live[i].start() != start || cap(b) == 0 {
		table.badFrees++
		table.mu.Unlock()
		panic(errDoubleFree)
	}
	m := table.live[i]
	table.live = append(table.live[:i], table.live[i+1:]...)
	table.mapped -= uint64(m.n)
	table.frees++
	table.mu.Unlock()
	// Unmap after unlocking: the range is out of the table, so no other
	// Free or Release can reach it.
	if err := sysFree(unsafe.Slice((*byte)(m.p), m.n)); err != nil {
		return fmt.Errorf("offheap: munmap: %w", err)
	}
	return nil
}

// Release lets the OS reclaim the whole pages inside b[:len(b)] while keeping
// them mapped: on Linux (madvise MADV_DONTNEED) the process RSS drops at
// once, and the pages read as zero when next touched, costing a page fault
// each. Bytes of b on a page only partly inside b are kept. Elsewhere
// Release leaves the memory as it is. Use it for a large buffer that will be
// idle for a while but not freed.
//
// Release is safe for concurrent use with other Release and Alloc calls;
// the caller must not use the released bytes concurrently. It panics with
// "memkit/offheap: foreign memory" if b is not inside one live mapping of
// this package (releasing Go heap memory would corrupt the heap), and
// returns an error if the OS refuses.
func Release(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	start := uintptr(p)
	end := start + uintptr(len(b))
	table.mu.Lock()
	i := search(start + 1) // the first mapping starting after start
	ok := i > 0 && end <= table.live[i-1].start()+table.live[i-1].n
	if ok {
		table.releases++
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
		return fmt.Errorf("offheap: madvise: %w", err)
	}
	return nil
}

// ReadStats fills *s with the totals of every live mapping of the process:
// InUseBytes and ReservedBytes are the bytes mapped (Alloc rounds to
// pages, and released pages still count), LiveObjects the live mappings,
// Allocs and Frees the calls that succeeded, Failures the mappings the OS
// refused, Releases the Release calls, BadFrees the rejected Frees. Grows
// equals Allocs. It does not allocate and takes one short lock.
func ReadStats(s *stats.Stats) {
	s.Reset()
	table.mu.Lock()
	defer table.mu.Unlock()
	s.InUseBytes = table.mapped
	s.ReservedBytes = table.mapped
	s.LiveObjects = uint64(len(table.live))
	s.Allocs = table.allocs
	s.Frees = table.frees
	s.Failures = table.failures
	s.Grows = table.allocs
	s.Releases = table.releases
	s.BadFrees = table.badFrees
}

// Malloc is [Alloc] in the shape of the malloc parameter of
// slab.NewArena: it returns nil where Alloc returns an error, which the
// arena reports as slab.ErrNoSpace. Pair it with [Unmap], so that slabs the
// arena releases go back to the OS:
//
//	a, err := slab.NewArena(64, 1<<20, 2, offheap.Malloc, slab.WithFree(offheap.Unmap))
func Malloc(n int) []byte {
	b, err := Alloc(n)
	if err != nil {
		return nil
	}
	return b
}

// Unmap is [Free] in the shape of slab.WithFree's parameter. Besides Free's
// misuse panics, it panics if the OS refuses to unmap, which a valid mapping
// never causes.
func Unmap(b []byte) {
	if err := Free(b); err != nil {
		panic(err)
	}
}
