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
	"github.com/memkit/memkit/internal/shard"
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
// check is the buffer's slot, which holds its ticket while it is out and
// nil while it is idle (see bounded.go).
type region struct {
	mem   []byte
	base  uintptr
	start unsafe.Pointer // &mem[0]

	slabs   []slabInfo
	classes []classInfo

	budget *budget.Budget // charged for each run a class takes; nil: none

	mu     sync.Mutex
	next   int          // next unassigned slab
	cursor []cursor     // per class: where the next buffer is carved
	spare  []shard.Slot // the rest of the last chunk of slots (see newSlots)
}

// slabInfo is one slab's: written once, when its run is assigned.
type slabInfo struct {
	class    atomic.Int32 // class index, or -1 while unassigned
	runStart atomic.Int32 // first slab of the run it belongs to
	// slots, on a run's first slab: the first of the slots of the run's
	// buffers (an array of runBytes >> the class's shift), indexed by
	// [classInfo.slotIndex].
	slots atomic.Pointer[shard.Slot]
}

// classInfo is one class's.
type classInfo struct {
	size     int
	shift    uint   // log2 of the largest power of two <= size: buffers' offsets >> shift differ
	divisor  uint64 // 2^64/size rounded up, for the divisibility test of isStart
	runBytes int
	// A slot's index is the buffer's (offset in the run >> shift), its bits
	// rotated so that neighbouring buffers' slots fall on different cache
	// lines (4 slots to a line): with r = i>>lshift (which quarter of the
	// run), index i goes to ((i^(r&skew))&lmask)<<2 | r. In a run of 64
	// buffers or more (skew 3) the xor shifts each quarter by its number,
	// so that buffers a quarter of the run apart fall on different lines
	// too: without it they shared one, and carve's batches of 32 are a
	// quarter of a 512-byte class's run, so two Ps each taking the top of
	// its own batch wrote one slot line, and a RunParallel Get+Put of 512
	// bytes ran 2-3.5x slower in one run in three. (In smaller runs one
	// batch is the whole run, and the xor would put neighbours across a
	// quarter's edge on one line.) A run of fewer than 8 buffers spaces
	// its slots a line apart instead (lmask all ones, lshift 63: i goes to
	// i<<2), so that no two buffers share a slot line, which Gets and Puts
	// on different Ps would pass back and forth.
	lmask    uintptr
	skew     uintptr
	lshift   uint
	nslots   int         // slots per run
	idle     *shard.Idle // the idle buffers' tickets; keys are offsets in mem
	held     atomic.Int64
	fbAllocs atomic.Uint64 // heap fallbacks got
	fbFrees  atomic.Uint64 // heap fallbacks put back
	_        [64]byte      // the fast path reads the fields above; keep classes apart
}

type cursor struct {
	run    int // first slab of the current run; -1 before the first
	off    int
	slabs  int // slabs owned by the class
	carved int // buffers carved
}

// maxBudget is the largest region a Bounded pool takes: 2^31 slabs of
// 64 KiB, 128 TiB (on 32-bit platforms, what an int can hold).
const maxBudget = int64(1<<(31+slabShift))*int64(bits.UintSize/64) + int64(1<<31-1)*int64(1-bits.UintSize/64)

// init reserves r, a zero region, of size bytes, rounded down to whole
// slabs, or returns an error if the machine cannot hold it: the region is
// one Go heap object, and a Go heap allocation past the memory the system
// will give ends the process rather than fail.
func (r *region) init(size int64, sizes []int, b *budget.Budget) error {
	nslabs := int(size >> slabShift)
	if mem := machineMemory(); mem > 0 && uint64(nslabs)<<slabShift > mem {
		return fmt.Errorf("%sWithBudget(%d): a Bounded pool's region is more than this machine's memory (%d bytes of RAM and swap): lower it", prefix, size, mem)
	}
	r.budget = b
	r.mem = make([]byte, nslabs<<slabShift)
	r.slabs = make([]slabInfo, nslabs)
	r.classes = make([]classInfo, len(sizes))
	r.cursor = make([]cursor, len(sizes))
	r.start = unsafe.Pointer(unsafe.SliceData(r.mem))
	r.base = uintptr(r.start)
	owned.Add(r.mem, "a Bounded bytepool", true)
	for i := range r.slabs {
		r.slabs[i].class.Store(-1)
	}
	for c, size := range sizes {
		ci := &r.classes[c]
		ci.size = size
		ci.shift = uint(bits.Len(uint(size)) - 1)
		ci.divisor = ^uint64(0)/uint64(size) + 1
		ci.runBytes = runBytes(size)
		ci.nslots = ci.runBytes >> ci.shift
		// The buffer count, not the slot count, decides: a class between
		// powers of two (12 KiB: 5 buffers, 8 slots) skips slot numbers,
		// and rotated, two of its neighbours shared a line.
		if n := ci.nslots; ci.runBytes == slabSize && ci.runBytes/size >= 8 {
			ci.lshift = uint(bits.Len(uint(n/4)) - 1)
			ci.lmask = uintptr(n/4 - 1)
			if n >= 64 {
				ci.skew = 3
			}
		} else {
			ci.lshift, ci.lmask = 63, ^uintptr(0)
			ci.nslots *= 4
		}
		ci.idle = shard.NewIdle(func(off uintptr) *shard.Slot { return r.slotAt(off, c) })
		r.cursor[c].run = -1
	}
	return nil
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

// carve carves up to n fresh buffers of class c and size bytes, taking new
// runs as needed, and makes them idle in the class. It reports how many it
// carved (fewer than n, and maybe none, once the region is used up) and
// the bytes of the new runs it took. The caller charges those with
// [region.charge] once it holds no lock: the charge may call the budget
// alert, which may call the pool. In the checked build the buffers are
// poisoned, as every idle buffer is.
func (r *region) carve(c, size, n int) (carved, took int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ci := &r.classes[c]
	cur := &r.cursor[c]
	run := ci.runBytes
	for carved < n {
		if cur.run < 0 || cur.off+size > run {
			k := run >> slabShift
			if r.next+k > len(r.slabs) {
				break
			}
			cur.run, cur.off = r.next, 0
			cur.slabs += k
			r.slabs[cur.run].slots.Store(&r.newSlots(ci.nslots)[0])
			for j := r.next; j < r.next+k; j++ {
				r.slabs[j].runStart.Store(int32(cur.run))
				r.slabs[j].class.Store(int32(c))
			}
			r.next += k
			took += run
		}
		off := cur.run<<slabShift + cur.off
		if checked.Enabled {
			checked.Fill(r.mem[off:off+size], checked.PoisonByte)
		}
		ci.idle.Add(uintptr(off))
		cur.off += size
		cur.carved++
		carved++
	}
	return carved, took
}

// slotChunk is how many slots newSlots allocates at a time: 64 KiB, a
// large object to the Go heap, which starts it on a page. A smaller array
// of slots, which hold pointers, starts 8 bytes into a cache line (the
// heap's header for such objects), so no slot array of its own would start
// a line, and one slot in four would straddle two: buffers whose slots
// slotIndex puts on different lines would share one.
const slotChunk = 64 << 10 / int(unsafe.Sizeof(shard.Slot{}))

// newSlots returns n zero slots, n a multiple of 4 (whole lines), starting
// on a cache line: carved from a chunk of slotChunk slots, or an array of
// their own past that. The caller holds r.mu.
func (r *region) newSlots(n int) []shard.Slot {
	if n > len(r.spare) {
		r.spare = make([]shard.Slot, max(n, slotChunk))
	}
	s := r.spare[:n:n]
	r.spare = r.spare[n:]
	return s
}

// charge charges the budget, if any, for took bytes of runs carve took. The
// caller must hold no lock of the pool (the alert may call any method).
func (r *region) charge(took int) {
	if took > 0 && r.budget != nil {
		r.budget.Charge(int64(took))
	}
}

// classOf returns class c's info, c < len(r.classes), which the lookup
// table guarantees: no bounds check.
func (r *region) classOf(c uint8) *classInfo {
	return (*classInfo)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.classes)), uintptr(c)*unsafe.Sizeof(classInfo{})))
}

// slabAt returns the info of the slab holding offset off, which must be
// inside the region: no bounds check.
func (r *region) slabAt(off uintptr) *slabInfo {
	return (*slabInfo)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.slabs)), (off>>slabShift)*unsafe.Sizeof(slabInfo{})))
}

// slotAt returns the slot of the buffer of class c at offset off, which
// must be a buffer's start.
func (r *region) slotAt(off uintptr, c int) *shard.Slot {
	run := uintptr(r.slabAt(off).runStart.Load())
	return slotOf(r.slabs[run].slots.Load(), r.classes[c].slotIndex(off-run<<slabShift))
}

// slotOf returns slot i of the run whose first slot is first, with no
// bounds check: slotIndex keeps i below the run's count.
func slotOf(first *shard.Slot, i uintptr) *shard.Slot {
	return (*shard.Slot)(unsafe.Add(unsafe.Pointer(first), i*unsafe.Sizeof(shard.Slot{})))
}

// slotIndex is the index in its run's slots of the buffer at offset in in
// the run.
func (ci *classInfo) slotIndex(in uintptr) uintptr {
	i := in >> (ci.shift & 63) // shift counts below 64: no guard for larger ones
	r := i >> (ci.lshift & 63)
	return ((i^(r&ci.skew))&ci.lmask)<<2 | r
}

// startSlot returns the slot of the buffer of class c at p, which must be
// inside the region, or nil if p is not the start of a buffer of class c.
func (r *region) startSlot(p unsafe.Pointer, c int) *shard.Slot {
	if !r.isStart(p, c) {
		return nil
	}
	return r.slotAt(uintptr(p)-r.base, c)
}

// census reports class c's buffers carved, its slabs, its buffers out and
// their Gets, by a load of each carved buffer's slot: exact when no Get or
// Put runs meanwhile.
func (r *region) census(c int) (carved, slabs, out int, gets uint64) {
	r.mu.Lock()
	carved, slabs = r.cursor[c].carved, r.cursor[c].slabs
	r.mu.Unlock()
	for j := range r.slabs {
		sl := &r.slabs[j]
		if sl.class.Load() != int32(c) {
			continue
		}
		first := sl.slots.Load()
		if first == nil {
			continue
		}
		for k := range uintptr(r.classes[c].nslots) {
			s := slotOf(first, k)
			if s.Out() {
				out++
			}
			gets += s.Gets()
		}
	}
	return carved, slabs, out, gets
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
	sl := &r.slabs[off>>slabShift]
	if int(sl.class.Load()) != c {
		return false
	}
	in := uint64(off - int(sl.runStart.Load())<<slabShift)
	m := r.classes[c].divisor
	return in*m <= m-1
}

// usedSlabs reports how many slabs the classes have taken.
func (r *region) usedSlabs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}
