package arena

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/sysmem"
)

// Arena is memory, taken from the heap in chunks as it grows, in which
// objects of any type are allocated one by one ([New], [MakeSlice], [Append], [CloneString], ...) and freed
// all at once ([Arena.Reset] to reuse the memory, [Arena.Free] to give it
// up), as with Go's experimental arena package, but GC-safe and without
// GOEXPERIMENT.
//
// An Arena is not safe for concurrent use; give each goroutine its own, for
// example from a [Pool]. The zero value is an empty arena with the default
// options, ready to use. An Arena must not be copied after first use.
//
// Memory lives on the Go heap, in chunks the GC knows the layout of: each
// element type with pointers has chunks of its own, allocated as a []T, so
// a pointer stored in an arena object keeps its target alive exactly as it
// would in an object from new(T); pointer-free types share chunks the GC
// does not scan. A chunk stays alive as long as any pointer into it does.
// New costs a lookup in a small per-arena cache of element types and a
// bump of an offset, about 4 ns and no heap allocation once the arena
// holds a chunk for the type; a new chunk costs one heap allocation per
// [DefaultChunkSize] bytes (or [WithChunkSize]). The memory of each object
// is zeroed when it is handed out, as new(T) would; the arena holds at most
// one partly filled chunk per element type, and a request that does not
// fit at the end of a chunk leaves the rest of it unused, at most a quarter
// of a chunk.
//
// Objects must not be used after their arena is reset or freed: the memory
// is handed out again and another object will overwrite it. Such a use is a
// bug, as with Go's arena package; it cannot corrupt the GC, and the
// checked build (-tags memkitdebug) reports a write after Reset or Free
// when the memory is handed out again (best effort; a read is not
// reported).
type Arena struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	cache [cacheSize]cacheEntry
	objs  uintptr // objects handed out since the last Reset

	ns    lane    // the chunks of every pointer-free type
	zero  lane    // zero-size objects: all at &zeroBase
	lanes []*lane // ns and one lane per pointerful type
	byKey map[unsafe.Pointer]*lane

	core
	pool   *Pool
	pooled bool // given back to pool by Put, not taken out by Get since
}

// cacheSize is the number of entries of an Arena's type cache, a power of
// two. Types that collide in it still work, through a map, but slower.
const cacheSize = 16

type cacheEntry struct {
	key unsafe.Pointer // typeKey of the element type
	s   *lane
}

// cacheIndex maps a type key to its cache entry, by Fibonacci hashing.
func cacheIndex(k unsafe.Pointer) uintptr {
	return uintptr(uint32(uintptr(k))*0x9E3779B9) >> (32 - 4)
}

// NewArena returns an empty arena configured by opts. It panics with a
// "memkit/arena: " message naming the first option out of range.
func NewArena(opts ...Option) *Arena {
	a := &Arena{}
	a.init(newConfig(opts, false))
	return a
}

func (a *Arena) init(cfg config) {
	a.cfg = cfg
	a.inited = true
	a.ns.init(noscanInfo, cfg.chunk)
	a.zero = lane{base: unsafe.Pointer(&zeroBase), info: noscanInfo}
	a.lanes = append(a.lanes[:0], &a.ns)
	if (cfg.account != nil || cfg.alert != nil) && a.acct == nil {
		a.acct = newAccount(a, cfg.account, nil, cfg.alert)
	}
	if checked.Enabled {
		a.debugInit()
		if a.pool == nil {
			checked.Register(a, leakless)
		}
	}
}

// New allocates a zeroed object of type T in the arena and returns a
// pointer to it, as new(T) does. If the arena's budget is exhausted, the
// object comes from the Go heap instead (see [WithBudget]). It panics if
// the arena was freed, and with "memkit/arena: requested size more than the
// system can allocate" for a type the system cannot allocate now (asked
// before any value of T is made; [TryNew] returns [ErrBudget]). Objects
// of a zero-size type all share one address, as with new.
func New[T any](a *Arena) *T {
	k := typeKey[T]()
	if e := &a.cache[cacheIndex(k)]; e.key == k {
		s := e.s
		mask := alignOf[T]() - 1
		off := (s.off + mask) &^ mask
		if end := off + sizeOf[T](); end <= s.lim {
			s.off = end
			a.objs++
			p := unsafe.Add(s.base, off)
			if checked.Enabled {
				unpoison(s.info, p, sizeOf[T]())
			}
			return (*T)(p)
		}
	}
	p, _ := allocSlow[T](a, 1, true)
	return p
}

// TryNew is [New] that, when the object does not fit in the arena's budget,
// returns nil and [ErrBudget] (or an error wrapping it) instead of falling
// back to the heap, leaving the arena unchanged.
func TryNew[T any](a *Arena) (*T, error) {
	return allocN[T](a, 1, false)
}

// MakeSlice allocates a zeroed slice of T with the given length and
// capacity in the arena, as make([]T, len, cap) does; cap(s) is exactly
// cap, so appending beyond it with the built-in append moves the slice to
// the heap (use [Append] to grow it in the arena). If the arena's budget is
// exhausted, the slice comes from the Go heap instead. It panics with
// "memkit/arena: negative length" if len or cap is negative, with
// "memkit/arena: length greater than capacity" if len > cap, with
// "memkit/arena: requested size too large" past the largest slice the
// runtime makes, with "memkit/arena: requested size more than the system
// can allocate" when the system refuses the memory (where make would end
// the process), and if the arena was freed.
func MakeSlice[T any](a *Arena, len, cap int) []T {
	checkLenCap(len, cap)
	p, _ := allocN[T](a, cap, true)
	return unsafe.Slice(p, cap)[:len]
}

// TryMakeSlice is [MakeSlice] that, when the slice does not fit in the
// arena's budget or the system cannot allocate it, returns nil and
// [ErrBudget] (or an error wrapping it) instead of falling back to the heap
// or panicking, leaving the arena unchanged but for Stats.Failures.
func TryMakeSlice[T any](a *Arena, len, cap int) ([]T, error) {
	checkLenCap(len, cap)
	p, err := allocN[T](a, cap, false)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice(p, cap)[:len], nil
}

func checkLenCap(len, cap int) {
	if len < 0 || cap < 0 {
		panic(msgNegative)
	}
	if len > cap {
		panic(msgLenCap)
	}
}

// allocN allocates n zeroed elements of T: with the fast path of New when
// they fit in the current chunk of T, else through allocSlow.
func allocN[T any](a *Arena, n int, fallback bool) (*T, error) {
	k := typeKey[T]()
	size := sizeOf[T]()
	if e := &a.cache[cacheIndex(k)]; e.key == k && uintptr(n) <= (1<<30)/(size|1) {
		s := e.s
		mask := alignOf[T]() - 1
		off := (s.off + mask) &^ mask
		nb := size * uintptr(n)
		if end := off + nb; end <= s.lim && (nb > 0 || s == &a.zero) {
			s.off = end
			a.objs++
			p := unsafe.Add(s.base, off)
			if checked.Enabled {
				unpoison(s.info, p, nb)
			}
			return (*T)(p), nil
		}
	}
	return allocSlow[T](a, n, fallback)
}

// maxBytes is the largest request in bytes, as the runtime's: a slice of
// more cannot be allocated.
const maxBytes = uintptr(1)<<(min(unsafe.Sizeof(uintptr(0))*8-1, 47)) - 1

// checkSystem asks the system whether it can serve nb bytes (a request of
// at least sysmem.ProbeMin): if not, a call that falls back to the heap
// (fallback) panics with msgNoMemory, as make would have ended the process
// with the runtime's fatal "out of memory"; a TryNew-style call gets an
// error wrapping ErrBudget.
func checkSystem(nb uintptr, fallback bool) error {
	if sysmem.Available(uint64(nb)) {
		return nil
	}
	if fallback {
		panic(msgNoMemory)
	}
	return fmt.Errorf("%w: %d bytes are more than the system can allocate now", ErrBudget, nb)
}

// allocSlow is the slow path of every allocation of n elements of T: the
// arena's first use, a type not in the cache, a full chunk, a request of
// zero bytes, a large one, or the budget. It publishes the statistics when
// due (see stats.go).
func allocSlow[T any](a *Arena, n int, fallback bool) (*T, error) {
	ev := a.events()
	p, err := allocMore[T](a, n, fallback)
	if a.due(ev) {
		a.publish()
	}
	return p, err
}

// allocMore is allocSlow but for publishing.
func allocMore[T any](a *Arena, n int, fallback bool) (*T, error) {
	if a.freed {
		if checked.Enabled {
			a.freedMisuse("New", unsafe.Pointer(a))
		}
		panic(msgFreed)
	}
	if checked.Enabled && a.pooled {
		a.pool.pooledMisuse("New", a)
	}
	if !a.inited {
		a.init(defaultConfig())
	}
	k := typeKey[T]()
	size := sizeOf[T]()
	if size > 0 && uintptr(n) > maxBytes/size {
		panic(msgTooLarge)
	}
	if err := checkSystem(size*uintptr(n), fallback); err != nil {
		a.failures++
		return nil, err
	}
	s := a.lookup(k)
	if s == nil {
		s = a.addLane(k, infoFor[T]())
	}
	nb := size * uintptr(n)
	if nb == 0 {
		a.objs++
		return (*T)(unsafe.Pointer(&zeroBase)), nil
	}
	p, err := a.alloc(s, nb, alignOf[T]())
	if err == nil {
		a.objs++
		return (*T)(p), nil
	}
	if !fallback {
		a.failures++
		return nil, err
	}
	a.fallbacks++
	a.allocs++
	return unsafe.SliceData(make([]T, n)), nil
}

// lookup returns the lane of the type with key k, or nil if the arena
// has none, and caches it.
func (a *Arena) lookup(k unsafe.Pointer) *lane {
	e := &a.cache[cacheIndex(k)]
	if e.key == k {
		return e.s
	}
	s := a.byKey[k]
	if s != nil {
		*e = cacheEntry{k, s}
	}
	return s
}

// addLane makes the type with key k and info ti known to the arena.
func (a *Arena) addLane(k unsafe.Pointer, ti *typeInfo) *lane {
	var s *lane
	switch {
	case ti.size == 0:
		s = &a.zero
	case !ti.ptrs:
		s = &a.ns
	default:
		s = new(lane)
		s.init(ti, a.cfg.chunk)
		a.lanes = append(a.lanes, s)
	}
	if a.byKey == nil {
		a.byKey = make(map[unsafe.Pointer]*lane)
	}
	a.byKey[k] = s
	a.cache[cacheIndex(k)] = cacheEntry{k, s}
	return s
}

// Reset frees every object of the arena at once and keeps its memory for
// reuse: the objects must not be used afterwards, and the arena hands out
// their memory again, zeroed. Reset clears the memory the objects used, so
// that the pointers they held no longer keep anything alive; its cost is
// proportional to that memory. Chunks that the arena held but did not use
// since the previous Reset are given to a recycler shared by all arenas,
// and dedicated allocations of large requests are dropped, so an arena
// reset in a loop keeps about the memory of its last cycle. Reset panics
// if the arena was freed.
func (a *Arena) Reset() {
	if a.freed {
		if checked.Enabled {
			a.freedMisuse("Reset", unsafe.Pointer(a))
		}
		panic(msgFreed)
	}
	if checked.Enabled {
		if a.pooled {
			a.pool.pooledMisuse("Reset", a)
		}
		a.freeing("Reset")
	}
	a.reset()
	a.publish()
}

// reset is Reset, for Reset and Pool.Put.
func (a *Arena) reset() {
	for _, s := range a.lanes {
		a.resetLane(s)
	}
	a.dropLarge()
	a.frees += uint64(a.objs)
	a.allocs += uint64(a.objs)
	a.objs = 0
}

// shed gives up every chunk of a, just reset, as Free does, and leaves it
// empty and usable: for the checked build's Pool, whose put arenas wait
// out of reuse.
func (a *Arena) shed() {
	for _, s := range a.lanes {
		a.freeLane(s)
		s.init(s.info, a.cfg.chunk)
	}
}

// Free frees every object of the arena and gives its memory up: its chunks
// go, zeroed, to a recycler shared by all arenas, which other arenas draw
// from and the GC empties over time. Neither the objects nor the arena may
// be used afterwards: any later call on the arena, Free included, panics
// with "memkit/arena: use of freed arena", except ReadStats and
// PublishStats.
func (a *Arena) Free() {
	if a.freed {
		if checked.Enabled {
			a.freedMisuse("Free", unsafe.Pointer(a))
		}
		panic(msgFreed)
	}
	if checked.Enabled {
		if a.pooled {
			a.pool.pooledMisuse("Free", a)
		}
		a.freeing("Free")
		if a.pool != nil { // it leaves its pool for good
			a.pool.trk.Free("Free", uintptr(unsafe.Pointer(a)), 1)
		}
	}
	for _, s := range a.lanes {
		a.freeLane(s)
	}
	a.dropLarge()
	a.frees += uint64(a.objs)
	a.allocs += uint64(a.objs)
	a.objs = 0
	a.lanes, a.byKey = nil, nil
	a.cache = [cacheSize]cacheEntry{}
	a.freed = true
	a.publish()
}
