package gomem

import (
	"io"
	"sync"

	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/checked"
)

// MaxBlockSize is the largest allocation the allocator serves from its
// blocks (4 MiB); Malloc serves larger ones with make, as gomem does.
const MaxBlockSize = 1 << 22

// ScalableMemoryAllocator is gomem's growable exact-size allocator with
// partial free, on an [extent.Allocator] whose blocks start at the size given
// to NewScalableMemoryAllocator and double as it grows.
//
// It is not safe for concurrent use: Malloc and Free must be called from
// one goroutine at a time, as in gomem. The zero value is not usable: create
// it with NewScalableMemoryAllocator. It must not be copied. Malloc and Free
// cost O(log n) for n free ranges and do not allocate once warm; memory is
// not zeroed and lives on the Go heap in pointer-free blocks the GC does not
// scan.
type ScalableMemoryAllocator struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	a                      *extent.Allocator
	totalMalloc, totalFree int64
}

// NewScalableMemoryAllocator returns an allocator whose first block is size
// bytes (clamped to 64 B .. 1 GiB); later blocks double.
func NewScalableMemoryAllocator(size int) *ScalableMemoryAllocator {
	a, err := extent.New(extent.WithBlockSize(min(max(size, 64), 1<<30)), extent.WithGrowth(2))
	if err != nil {
		panic("memkit/gomem: NewScalableMemoryAllocator: " + err.Error())
	}
	return &ScalableMemoryAllocator{a: a}
}

// Unwrap returns the extent.Allocator underneath.
func (s *ScalableMemoryAllocator) Unwrap() *extent.Allocator { return s.a }

// GetAllocator returns s (gomem's RecyclableMemory and allocator share it).
func (s *ScalableMemoryAllocator) GetAllocator() *ScalableMemoryAllocator { return s }

// Malloc returns size bytes (len and cap size). A size above MaxBlockSize
// is served by make and is not the allocator's (Free returns false for it).
// It panics with "memkit/extent: negative size" if size < 0.
func (s *ScalableMemoryAllocator) Malloc(size int) []byte {
	if size > MaxBlockSize {
		return make([]byte, size)
	}
	s.totalMalloc += int64(size)
	return s.a.Malloc(size)
}

// msgForeign is extent's panic for memory outside its blocks.
const msgForeign = "memkit/extent: foreign memory"

// Free gives back mem, any part of memory Malloc returned and not yet freed,
// and reports true; it reports false, changing nothing, for memory the
// allocator does not own (gomem's result). A second Free of the same bytes
// panics with "memkit/extent: double free".
func (s *ScalableMemoryAllocator) Free(mem []byte) (ok bool) {
	if len(mem) == 0 {
		return false
	}
	defer func() {
		if r := recover(); r != nil {
			if !isForeign(r) {
				panic(r)
			}
			ok = false
		}
	}()
	s.a.Free(mem)
	s.totalFree += int64(len(mem))
	return true
}

// isForeign reports whether a panic of extent's Free is its report of
// memory outside its blocks, in the release or the checked build.
func isForeign(r any) bool {
	if m, ok := r.(*checked.Misuse); ok {
		return m.Kind == checked.ForeignFree
	}
	return r == msgForeign
}

// FreeRest keeps the first keep bytes of *mem and frees the rest, setting
// *mem to what is kept.
func (s *ScalableMemoryAllocator) FreeRest(mem *[]byte, keep int) {
	s.totalFree += int64(len(*mem) - keep)
	*mem = s.a.FreeRest(*mem, keep)
}

// Borrow returns size bytes of scratch memory, valid until the next Recycle
// ("use the memory at once", as gomem says); it must not be freed.
func (s *ScalableMemoryAllocator) Borrow(size int) []byte { return s.a.Borrow(size) }

// Read reads exactly n bytes from r into memory from Malloc. On an error the
// memory is freed and the error (io.ErrUnexpectedEOF for a short read) is
// returned.
func (s *ScalableMemoryAllocator) Read(r io.Reader, n int) ([]byte, error) {
	mem := s.Malloc(n)
	if _, err := io.ReadFull(r, mem); err != nil {
		s.Free(mem)
		return nil, err
	}
	return mem, nil
}

// Recycle gives back every block: all memory from Malloc and Borrow becomes
// invalid at once, as gomem's Recycle. The allocator stays usable.
func (s *ScalableMemoryAllocator) Recycle() { s.a.Close() }

// Trim gives back blocks that are entirely free (keeping enough for the
// recent peak; see extent's Trim).
func (s *ScalableMemoryAllocator) Trim() { s.a.Trim() }

// GetTotalMalloc returns the bytes Malloc has served from the allocator's
// blocks (requests above MaxBlockSize excluded).
func (s *ScalableMemoryAllocator) GetTotalMalloc() int64 { return s.totalMalloc }

// GetTotalFree returns the bytes Free and FreeRest have given back.
func (s *ScalableMemoryAllocator) GetTotalFree() int64 { return s.totalFree }
