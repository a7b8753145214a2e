package gomem

import (
	"fmt"
	"io"
	"sync"
	"unsafe"

	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/sysmem"
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
	scratch                []byte // Borrow's memory, a range of a: every Borrow returns its start
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
// It panics with "memkit/extent: negative size" if size < 0, and with
// "memkit/gomem: Malloc of n bytes: more than the system can provide" when
// the machine cannot allocate size bytes now (asked of the kernel first),
// where gomem's make ended the process with the runtime's fatal
// out-of-memory.
func (s *ScalableMemoryAllocator) Malloc(size int) []byte {
	if size > MaxBlockSize {
		return makeLarge("Malloc", size)
	}
	s.totalMalloc += int64(size)
	return s.a.Malloc(size)
}

// msgForeign is extent's panic for memory outside its blocks.
const msgForeign = "memkit/extent: foreign memory"

// Free gives back mem, any part of memory Malloc returned and not yet freed,
// and reports true; it reports false, changing nothing, for memory the
// allocator does not own (gomem's result). A second Free of the same bytes
// panics with "memkit/extent: double free", a Free of memory Borrow lent
// with "memkit/gomem: Free of Borrow memory".
func (s *ScalableMemoryAllocator) Free(mem []byte) (ok bool) {
	if len(mem) == 0 {
		return false
	}
	s.mustNotBeBorrowed(mem)
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
	if keep < len(*mem) {
		s.mustNotBeBorrowed((*mem)[keep:])
	}
	s.totalFree += int64(len(*mem) - keep)
	*mem = s.a.FreeRest(*mem, keep)
}

// Borrow returns size bytes of scratch memory to use at once, as gomem's
// Borrow ("Malloc + Free = Find, must use the memory at once"): it is valid
// until the next Borrow or Recycle, and must not be freed. Every Borrow
// returns the start of the same scratch range, which the allocator keeps
// (Malloc never hands it out) and grows only when a Borrow is larger than
// any before it, so Borrow in a loop without Recycle — as gomem's README
// and benchmarks call it — holds at most the largest size borrowed (at most
// MaxBlockSize), as gomem's does. Borrow is a compare and a slice when the
// scratch is large enough, a Malloc when it grows. A size above
// MaxBlockSize is served by make, as Malloc serves it (gomem returned nil);
// a size the machine cannot allocate panics as Malloc does. The memory is
// not zeroed. Free of borrowed memory panics with "memkit/gomem: Free of
// Borrow memory".
func (s *ScalableMemoryAllocator) Borrow(size int) []byte {
	if uint(size) <= uint(len(s.scratch)) {
		return s.scratch[:size:size]
	}
	return s.borrowSlow(size)
}

// borrowSlow is Borrow of more than the scratch holds: it replaces the
// scratch with one of at least twice the size (at most MaxBlockSize), so
// that a rising run of sizes regrows it a few times only.
func (s *ScalableMemoryAllocator) borrowSlow(size int) []byte {
	if size > MaxBlockSize {
		return makeLarge("Borrow", size)
	}
	grown := s.a.Malloc(max(size, min(2*len(s.scratch), MaxBlockSize), 1024)) // panics if size < 0
	if s.scratch != nil {
		s.a.Free(s.scratch)
	}
	s.scratch = grown
	return grown[:size:size]
}

// mustNotBeBorrowed panics if mem shares bytes with Borrow's scratch, which
// Free would give to Malloc while Borrow still returns it.
func (s *ScalableMemoryAllocator) mustNotBeBorrowed(mem []byte) {
	if len(s.scratch) == 0 || len(mem) == 0 {
		return
	}
	p, q := uintptr(unsafe.Pointer(unsafe.SliceData(mem))), uintptr(unsafe.Pointer(unsafe.SliceData(s.scratch)))
	if p < q+uintptr(len(s.scratch)) && q < p+uintptr(len(mem)) {
		panic(msgFreeBorrowed)
	}
}

// msgFreeBorrowed is the panic of a Free of Borrow's memory.
const msgFreeBorrowed = "memkit/gomem: Free of Borrow memory"

// Read reads exactly n bytes from r into memory from Malloc. On an error the
// memory is freed and the error (io.ErrUnexpectedEOF for a short read, io.EOF
// if r had no byte at all) is returned.
//
// n usually comes from a peer's length field, so Read takes memory as the
// bytes arrive rather than n bytes up front: up to 64 KiB at once,
// then a buffer that doubles as it fills, so that a length the peer does not
// follow with data costs what it sent, not n. An n the machine cannot
// allocate now returns an error matched by errors.Is with extent.ErrBudget
// ("memkit/gomem: Read of n bytes: more than the system can provide"),
// having read nothing, where gomem ended the process. It panics with
// "memkit/extent: negative size" if n < 0.
func (s *ScalableMemoryAllocator) Read(r io.Reader, n int) ([]byte, error) {
	if n <= readStep {
		mem := s.Malloc(n)
		if _, err := io.ReadFull(r, mem); err != nil {
			s.Free(mem)
			return nil, err
		}
		return mem, nil
	}
	if !sysmem.Available(uint64(n)) {
		return nil, fmt.Errorf("memkit/gomem: Read of %d bytes: more than the system can provide: %w", n, extent.ErrBudget)
	}
	buf, err := readGrowing(r, n)
	if err != nil || n > MaxBlockSize {
		return buf, err // above MaxBlockSize, Malloc would have made it too
	}
	mem := s.Malloc(n)
	copy(mem, buf)
	return mem, nil
}

// readStep is the most [ScalableMemoryAllocator.Read] takes before the bytes
// to fill it have arrived.
const readStep = 64 << 10

// readGrowing reads exactly n > readStep bytes from r into a heap buffer
// that starts at readStep bytes and doubles, up to n, each time it fills.
func readGrowing(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, readStep)
	got := 0
	for {
		k, err := io.ReadFull(r, buf[got:])
		got += k
		if err != nil {
			if got > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if got == n {
			return buf[:n:n], nil
		}
		buf = append(buf, make([]byte, min(len(buf), n-len(buf)))...)
	}
}

// makeLarge makes n bytes for a request above MaxBlockSize, or panics with
// a memkit message when the machine cannot allocate them now.
func makeLarge(op string, n int) []byte {
	if !sysmem.Available(uint64(n)) {
		panic(fmt.Sprintf("memkit/gomem: %s of %d bytes: more than the system can provide", op, n))
	}
	return make([]byte, n)
}

// Recycle gives back every block: all memory from Malloc and Borrow becomes
// invalid at once, as gomem's Recycle. The allocator stays usable.
func (s *ScalableMemoryAllocator) Recycle() {
	s.a.Close()
	s.scratch = nil
}

// Trim gives back blocks that are entirely free (keeping enough for the
// recent peak; see extent's Trim).
func (s *ScalableMemoryAllocator) Trim() { s.a.Trim() }

// GetTotalMalloc returns the bytes Malloc has served from the allocator's
// blocks (requests above MaxBlockSize excluded).
func (s *ScalableMemoryAllocator) GetTotalMalloc() int64 { return s.totalMalloc }

// GetTotalFree returns the bytes Free and FreeRest have given back.
func (s *ScalableMemoryAllocator) GetTotalFree() int64 { return s.totalFree }
