package bytepool

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/owned"
)

// slabShift fixes a Bounded pool's slab at 64 KiB: small enough that every
// class of a modest budget gets one, large enough that its per-slab
// tables are small.
const (
	slabShift = 16
	slabSize  = 1 << slabShift
)

// region is the memory of a Bounded pool: one []byte of the whole budget,
// reserved at New and cut into 64 KiB slabs. A class takes memory a run at a
// time: one slab for classes up to 64 KiB, a few contiguous slabs for larger
// ones (sized to waste little), and keeps it; buffers are carved from the
// run front to back.
//
// Put checks a buffer is one of the region's (inside it, in a run of the
// right class, at a multiple of the class size from the run's start), which
// rejects foreign memory and slices whose start moved; the double-free
// check is the idle mark every pool writes into an idle buffer's first 8
// bytes (see [Pool.markIdle]).
type region struct {
	mem  []byte
	base uintptr

	// Per slab, written once when its run is assigned.
	classOf  []atomic.Int32 // class index, or -1 while unassigned
	runStart []atomic.Int32 // first slab of the run it belongs to

	divisor []uint64 // per class: 2^64/size rounded up, for the divisibility test of isStart

	runBytes []int // per class

	budget *budget.Budget // charged for each run a class takes; nil: none

	mu     sync.Mutex
	next   int      // next unassigned slab
	cursor []cursor // per class: where the next buffer is carved
}

type cursor struct {
	run   int // first slab of the current run; -1 before the first
	off   int
	slabs int // slabs owned by the class
}

// maxBudget is the largest region a Bounded pool takes: 2^31 slabs of
// 64 KiB, 128 TiB (on 32-bit platforms, what an int can hold).
const maxBudget = int64(1<<(31+slabShift))*int64(bits.UintSize/64) + int64(1<<31-1)*int64(1-bits.UintSize/64)

// newRegion reserves a region of size bytes, rounded down to whole slabs,
// or returns an error if the machine cannot hold it: the region is one Go
// heap object, and a Go heap allocation past the memory the system will
// give ends the process rather than fail.
func newRegion(size int64, minSize int, sizes []int, b *budget.Budget) (*region, error) {
	nslabs := int(size >> slabShift)
	if mem := machineMemory(); mem > 0 && uint64(nslabs)<<slabShift > mem {
		return nil, fmt.Errorf("%sWithBudget(%d): a Bounded pool's region is more than this machine's memory (%d bytes of RAM and swap): lower it", prefix, size, mem)
	}
	r := &region{
		budget:   b,
		mem:      make([]byte, nslabs<<slabShift),
		classOf:  make([]atomic.Int32, nslabs),
		runStart: make([]atomic.Int32, nslabs),
		divisor:  make([]uint64, len(sizes)),
		runBytes: make([]int, len(sizes)),
		cursor:   make([]cursor, len(sizes)),
	}
	r.base = uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
	owned.Add(r.mem, "a Bounded bytepool", true)
	for i := range r.classOf {
		r.classOf[i].Store(-1)
	}
	for c, size := range sizes {
		r.divisor[c] = ^uint64(0)/uint64(size) + 1
		r.runBytes[c] = runBytes(size)
		r.cursor[c].run = -1
	}
	return r, nil
}

// runBytes is the size of the runs a class of size bytes takes: one slab up
// to 64 KiB, else the whole number of slabs, for 1 to 4 buffers, that wastes
// the least.
func runBytes(size int) int {
	if size <= slabSize {
		return slabSize
	}
	best, bestWaste := 0, -1
	for n := 1; n <= 4; n++ {
		run := (n*size + slabSize - 1) &^ (slabSize - 1)
		if waste := (run - n*size) * 4 / n; bestWaste < 0 || waste < bestWaste {
			best, bestWaste = run, waste
		}
	}
	return best
}

// carve fills dst with fresh buffers of class c and size bytes, taking new
// runs as needed, and reports how many it carved: fewer than len(dst), and
// maybe none, once the region is used up, and the bytes of the new runs it
// took. The caller charges those with [region.charge] once it holds no
// lock: the charge may call the budget alert, which may read the pool's
// stats and so take every shard's lock. In the checked build the buffers
// are poisoned, as every idle buffer is.
func (r *region) carve(c, size int, dst []unsafe.Pointer) (n, took int) {
	r.mu.Lock()
	n, took = r.carveLocked(c, size, dst)
	r.mu.Unlock()
	return n, took
}

// charge charges the budget, if any, for took bytes of runs carve took. The
// caller must hold no lock of the pool (the alert may call any method).
func (r *region) charge(took int) {
	if took > 0 && r.budget != nil {
		r.budget.Charge(int64(took))
	}
}

// carveLocked is carve with r.mu held; it also reports the bytes of the new
// runs it took.
func (r *region) carveLocked(c, size int, dst []unsafe.Pointer) (n, took int) {
	cur := &r.cursor[c]
	run := r.runBytes[c]
	for n < len(dst) {
		if cur.run < 0 || cur.off+size > run {
			k := run >> slabShift
			if r.next+k > len(r.classOf) {
				break
			}
			cur.run, cur.off = r.next, 0
			cur.slabs += k
			for j := r.next; j < r.next+k; j++ {
				r.runStart[j].Store(int32(cur.run))
				r.classOf[j].Store(int32(c))
			}
			r.next += k
			took += run
		}
		off := cur.run<<slabShift + cur.off
		if checked.Enabled {
			checked.Fill(r.mem[off:off+size], checked.PoisonByte)
		}
		dst[n] = unsafe.Pointer(&r.mem[off])
		cur.off += size
		n++
	}
	return n, took
}

// contains reports whether p points into the region.
func (r *region) contains(p unsafe.Pointer) bool {
	return uintptr(p)-r.base < uintptr(len(r.mem))
}

// isStart reports whether p, which must be inside the region, is the start
// of a buffer of class c: in a run of the class, at a multiple of its size
// from the run's start. The multiple is tested with one multiplication
// (Lemire's divisibility test, exact for offsets below 2^32), not a
// division.
func (r *region) isStart(p unsafe.Pointer, c int) bool {
	off := int(uintptr(p) - r.base)
	slab := off >> slabShift
	if int(r.classOf[slab].Load()) != c {
		return false
	}
	in := uint64(off - int(r.runStart[slab].Load())<<slabShift)
	m := r.divisor[c]
	return in*m <= m-1
}

// classSlabs reports how many slabs class c owns.
func (r *region) classSlabs(c int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cursor[c].slabs
}

// usedSlabs reports how many slabs the classes have taken.
func (r *region) usedSlabs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}
