// Package owned is the registry of the memory memkit's allocators own, so
// that an allocator that keeps whatever it is given back (an Elastic
// bytepool) can refuse memory another memkit allocator owns instead of
// giving it a second owner.
//
// An allocator registers each region or mapping it carves buffers from
// when it takes it ([Add]; a Go-heap slice is forgotten when the GC
// collects it) and unregisters it when it gives it back ([Remove]). A user
// of the registry asks [Maybe] first, a compare against the lowest
// registered address and a bit test, and [Owner], a binary search, only
// when Maybe says the address could be in a registered range. Add and
// Remove allocate nothing once the table has grown to its largest (but
// for Add of a heap range: its weak pointer and cleanup).
//
// Memory the registry does not list is not seen: a range given back (a
// freed mapping) and memory of allocators that do not register.
package owned

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"
)

// Two filters in front of the table, so that a heap buffer near no
// registered range costs its Put a few instructions:
//
//   - lo is at most the lowest address of a registered range, and the
//     highest address while nothing was ever registered. Memory memkit
//     maps outside the Go heap (offheap, extent WithOffHeap) lies above
//     the Go heap on 64-bit Linux, so while only mappings are registered
//     every heap buffer is below lo: one load and one compare.
//   - granules has a bit for each 64 KiB of the address space, modulo 4
//     GiB, set where a registered range has a byte (and, until the next
//     rebuild, where a removed one had). A FixedPool's or a Bounded pool's
//     region is one large heap object, which has its pages to itself: the
//     heap buffers above it, in pages of their own, find their bit clear
//     unless they share a 64 KiB granule with a region's end or alias one
//     4 GiB away.
var (
	lo       atomic.Uintptr
	granules [granuleWords]atomic.Uint64
)

const (
	granuleShift = 16           // 64 KiB
	granuleWords = 1 << 16 / 64 // 2^16 granules: 4 GiB
	// rebuildEvery is how many Removes narrow the filters once.
	rebuildEvery = 64
)

func init() { lo.Store(^uintptr(0)) }

// Maybe reports whether p could be in a registered range: false means it
// is in none. It is one load and one compare while no range lies below p,
// and a bit test more otherwise.
func Maybe(p uintptr) bool {
	if p < lo.Load() {
		return false
	}
	g := p >> granuleShift
	return granules[g/64%granuleWords].Load()&(1<<(g%64)) != 0
}

// MustBeUnowned panics with "<op> of memory <owner> owns: return it to
// <owner> instead" if a registered range holds the byte at address a. op
// names the call with its package's prefix ("memkit/bytepool: Put").
func MustBeUnowned(op string, a uintptr) {
	if Maybe(a) {
		if owner := Owner(a); owner != "" {
			panic(op + " of memory " + owner + " owns: return it to " + owner + " instead")
		}
	}
}

// reg is the registry: two tables sorted by start address, one published
// (cur) and one a writer fills, each with the count of readers inside it.
// A writer, under mu, waits until the unpublished table has no reader,
// writes the new contents into it, and publishes it; a reader counts
// itself into the published table and checks it is still the published
// one. So a table a reader scans never changes under it, and no change
// allocates once both tables have grown.
var reg struct {
	mu       sync.Mutex
	tables   [2][]entry
	readers  [2]atomic.Int32
	cur      atomic.Int32
	id       uint64
	removals int // since the filters were last rebuilt
}

// entry is one registered range, [start, end).
type entry struct {
	start, end uintptr
	maxEnd     uintptr // the largest end of this entry and those before it
	owner      string
	id         uint64
	heap       bool               // Go-heap memory, alive while obj is
	obj        weak.Pointer[byte] // the first byte of a heap range
}

// Add registers mem[:cap(mem)] as memory owner ("buffer.FixedPool")
// carves buffers from. heap says whether mem is a Go-heap slice: the
// registry does not keep it alive, forgets it when the GC collects it, and
// never reports it once it is unreachable, so an address the heap reuses is
// not taken for the old owner's. Memory outside the heap (a mapping) stays
// registered until Remove, which forgets either kind.
func Add(mem []byte, owner string, heap bool) {
	if cap(mem) == 0 {
		return
	}
	e := entry{start: addr(mem), end: addr(mem) + uintptr(cap(mem)), owner: owner}
	if !heap {
		add(e)
		return
	}
	first := unsafe.SliceData(mem[:cap(mem)])
	e.heap, e.obj = true, weak.Make(first)
	runtime.AddCleanup(first, removeID, add(e))
}

// Remove forgets the range of owner that starts at mem's first byte, if
// there is one.
func Remove(mem []byte, owner string) {
	if cap(mem) > 0 {
		remove(func(e *entry) bool { return e.start == addr(mem) && e.owner == owner })
	}
}

// Owner returns the owner of the registered range that holds the byte at
// address a, or "" if none does.
func Owner(a uintptr) string {
	i := enter()
	defer reg.readers[i].Add(-1)
	t := reg.tables[i]
	// Back from the last range starting at or before a, while a range
	// could still reach a.
	for k := above(t, a) - 1; k >= 0 && t[k].maxEnd > a; k-- {
		if e := &t[k]; a < e.end && (!e.heap || e.obj.Value() != nil) {
			return e.owner
		}
	}
	return ""
}

// enter counts a reader into the published table and returns its index.
func enter() int32 {
	for {
		i := reg.cur.Load()
		reg.readers[i].Add(1)
		if reg.cur.Load() == i {
			return i
		}
		reg.readers[i].Add(-1)
	}
}

// above returns the index of the first range of t starting above a: a
// binary search without a closure, as Owner runs on a Put's slow path.
func above(t []entry, a uintptr) int {
	i, j := 0, len(t)
	for i < j {
		h := int(uint(i+j) >> 1)
		if t[h].start > a {
			j = h
		} else {
			i = h + 1
		}
	}
	return i
}

// add inserts e, after the ranges with the same start, and returns its ID.
// The filters cover e before the table lists it.
func add(e entry) uint64 {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.id++
	e.id = reg.id
	eachGranule(&e, func(w int, bit uint64) { granules[w].Or(bit) })
	if e.start < lo.Load() {
		lo.Store(e.start)
	}
	old := reg.tables[reg.cur.Load()]
	i := above(old, e.start)
	next := spare(len(old) + 1)
	copy(next, old[:i])
	next[i] = e
	copy(next[i+1:], old[i:])
	publish(next)
	return e.id
}

// removeID forgets the range with the given ID: the cleanup of a heap
// range.
func removeID(id uint64) { remove(func(e *entry) bool { return e.id == id }) }

// remove forgets the first range match accepts, if any, and narrows the
// filters every rebuildEvery removals.
func remove(match func(*entry) bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	old := reg.tables[reg.cur.Load()]
	for i := range old {
		if match(&old[i]) {
			next := spare(len(old) - 1)
			copy(next, old[:i])
			copy(next[i:], old[i+1:])
			publish(next)
			if reg.removals++; reg.removals >= rebuildEvery || len(next) == 0 {
				rebuild(next)
			}
			return
		}
	}
}

// spare returns the unpublished table, resized to n entries, once no
// reader is inside it. reg.mu must be held.
func spare(n int) []entry {
	k := 1 - reg.cur.Load()
	for reg.readers[k].Load() != 0 {
		runtime.Gosched() // a reader that loaded it before the last publish
	}
	t := reg.tables[k]
	if cap(t) < n {
		t = make([]entry, n, max(2*cap(t), n, 8))
	}
	clear(t[n:cap(t)]) // let go of removed ranges' weak pointers
	reg.tables[k] = t[:n]
	return t[:n]
}

// publish fills in t's maxEnd and makes it the table readers see. t must
// be what spare returned. reg.mu must be held.
func publish(t []entry) {
	var maxEnd uintptr
	for i := range t {
		maxEnd = max(maxEnd, t[i].end)
		t[i].maxEnd = maxEnd
	}
	reg.cur.Store(1 - reg.cur.Load())
}

// rebuild narrows the filters to the ranges of t, the published table. No
// bit a range of t needs is cleared, even for a moment. reg.mu must be
// held.
func rebuild(t []entry) {
	reg.removals = 0
	var bits [granuleWords]uint64
	for i := range t {
		eachGranule(&t[i], func(w int, bit uint64) { bits[w] |= bit })
	}
	for w := range granules {
		granules[w].Store(bits[w])
	}
	if len(t) == 0 {
		lo.Store(^uintptr(0))
	} else {
		lo.Store(t[0].start)
	}
}

// eachGranule calls f with the word and bit of each granule e has a byte
// in, stopping once it has named every granule.
func eachGranule(e *entry, f func(w int, bit uint64)) {
	first, last := e.start>>granuleShift, (e.end-1)>>granuleShift
	for g := first; g <= last && g-first < granuleWords*64; g++ {
		f(int(g/64%granuleWords), 1<<(g%64))
	}
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)]))) }
