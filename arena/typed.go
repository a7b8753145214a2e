package arena

import (
	"sync"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// Typed is an arena for objects of the one type T, for hot loops in which
// one type dominates (the nodes of a tree, the entries of a table): its
// [Typed.New] is an index bump in a []T chunk that inlines into the
// caller, 1 to 2 ns.
//
// A Typed is not safe for concurrent use; give each goroutine its own. It
// must be created with [NewTyped]; it may be copied only before its first
// use.
//
// Its memory is on the Go heap, in chunks allocated as []T of
// [DefaultChunkSize] bytes (or [WithChunkSize]; an object larger than a
// chunk gets an allocation of its own, dropped at Reset), so
// the GC scans them with T's layout: a pointer stored in an object keeps
// its target alive as in an object from new(T). Objects are zeroed when
// handed out; a chunk's tail is left unused only when a [Typed.MakeSlice]
// does not fit in it. Objects must not be used after the arena is reset or
// freed, as with [Arena].
type Typed[T any] struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	// The layout of these three fields is typedHead's, through which the
	// non-generic code in tcore reaches them.
	cur  []T // the current chunk, all of it
	next int // index in cur of the next object
	n    int // len(cur)

	c tcore
}

// typedHead is the layout of the first fields of every Typed[T].
type typedHead struct {
	cur      unsafe.Pointer
	len, cap int
	next, n  int
}

// headSize is the offset of Typed's c field, for every T: NewTyped checks.
// It is typedHead's size rounded up to tcore's alignment, which its
// atomics make 8 bytes on 32-bit platforms too.
const headSize = (unsafe.Sizeof(typedHead{}) + unsafe.Alignof(tcore{}) - 1) &^ (unsafe.Alignof(tcore{}) - 1)

// tcore is the non-generic part of a Typed: everything but New's fast
// path.
type tcore struct {
	core
	s        lane
	retired  int  // objects handed out in full chunks since the last Reset
	adj      int  // objects minus elements handed out in the current chunk
	nlarge   int  // dedicated allocations since the last Reset
	heapCur  bool // cur is a one-object heap fallback, not arena memory
	zeroObjs int  // objects of a zero-size T
}

// NewTyped returns an empty arena for objects of type T, configured by
// opts. It panics if an option is out of range.
func NewTyped[T any](opts ...Option) *Typed[T] {
	t := &Typed[T]{}
	if unsafe.Offsetof(t.c) != headSize {
		panic("memkit/arena: unexpected layout of Typed")
	}
	c := &t.c
	c.cfg = newConfig(opts, false)
	c.inited = true
	c.s.init(infoFor[T](), c.cfg.chunk)
	if c.cfg.account != nil || c.cfg.alert != nil {
		c.acct = newAccount(t, c.cfg.account, nil, c.cfg.alert)
	}
	if checked.Enabled {
		c.debugInit()
		checked.Register(t, leakless)
	}
	return t
}

// head returns the fields of the Typed that c is part of.
func (c *tcore) head() *typedHead {
	return (*typedHead)(unsafe.Add(unsafe.Pointer(c), -int(headSize)))
}

// New returns a pointer to a new zeroed T in the arena, as new(T) does. If
// the arena's budget is exhausted, the object comes from the Go heap
// instead (see [WithBudget]). It panics if the arena was freed, and as
// [New] does for a type the system cannot allocate.
func (t *Typed[T]) New() *T {
	if t.next == t.n {
		t.c.refill()
	}
	t.next++
	if checked.Enabled {
		t.c.unpoison(t.next-1, 1)
	}
	return &t.cur[t.next-1]
}

// TryNew is [Typed.New] that, when the object does not fit in the arena's
// budget, returns nil and [ErrBudget] (or an error wrapping it) instead of
// falling back to the heap, leaving the arena unchanged.
func (t *Typed[T]) TryNew() (*T, error) {
	if t.next < t.n {
		return t.New(), nil
	}
	p, err := t.c.alloc(1, false)
	return (*T)(p), err
}

// MakeSlice returns a zeroed slice of T with the given length and capacity
// in the arena, as make([]T, len, cap) does, with cap(s) exactly cap. If
// the arena's budget is exhausted, the slice comes from the Go heap
// instead. It panics as [MakeSlice] does.
func (t *Typed[T]) MakeSlice(len, cap int) []T {
	checkLenCap(len, cap)
	if i := t.next; cap > 0 && cap <= t.n-i && !t.c.heapCur {
		t.next = i + cap
		t.c.adj += 1 - cap
		if checked.Enabled {
			t.c.unpoison(i, cap)
		}
		return t.cur[i : i+len : i+cap]
	}
	p, _ := t.c.alloc(cap, true)
	return unsafe.Slice((*T)(p), cap)[:len]
}

// unpoison checks and zeroes n elements of the current chunk from index i,
// in the checked build.
func (c *tcore) unpoison(i, n int) {
	if !c.heapCur {
		h := c.head()
		unpoison(c.s.info, unsafe.Add(h.cur, uintptr(i)*c.s.info.size), uintptr(n)*c.s.info.size)
	}
}

// sync moves the current chunk from the head to the lane, for the code
// shared with Arena.
func (c *tcore) sync() {
	h := c.head()
	size := c.s.info.size
	c.s.base, c.s.off, c.s.lim = nil, 0, 0
	if h.cur != nil && size > 0 && !c.heapCur {
		c.s.base, c.s.off, c.s.lim = h.cur, uintptr(h.next)*size, uintptr(h.n)*size
	}
}

// unsync moves the current chunk from the lane back to the head.
func (c *tcore) unsync() {
	h := c.head()
	size := c.s.info.size
	if c.s.base == nil {
		*h = typedHead{}
		return
	}
	*h = typedHead{cur: c.s.base, len: int(c.s.lim / size), cap: int(c.s.lim / size),
		next: int(c.s.off / size), n: int(c.s.lim / size)}
}

// check panics if the Typed is freed or was not made by NewTyped; op
// names the call, for the checked build's report.
func (c *tcore) check(op string) {
	if c.freed {
		if checked.Enabled {
			c.freedMisuse(op, unsafe.Pointer(c.head()))
		}
		panic(msgFreed)
	}
	if !c.inited {
		panic(msgNoTyped)
	}
}

// refill is the slow path of New: it makes room for one object in cur,
// and publishes the statistics when due (see stats.go).
func (c *tcore) refill() {
	c.check("New")
	ev := c.events()
	c.makeRoom()
	if c.due(ev) {
		c.publish()
	}
}

// makeRoom is refill but for checking and publishing.
func (c *tcore) makeRoom() {
	h := c.head()
	size := c.s.info.size
	if size == 0 {
		c.zeroObjs += h.next + c.adj
		c.adj = 0
		*h = typedHead{cur: unsafe.Pointer(&zeroBase), len: 1 << 30, cap: 1 << 30, n: 1 << 30}
		return
	}
	checkSystem(size, true)
	c.retireCur()
	if c.s.std == 0 {
		// An object larger than a chunk gets an allocation of its own, as
		// Arena's large requests do, held as a one-object current chunk
		// that the next refill drops (heapCur) and Reset gives up.
		p, err := c.allocLarge(&c.s, size)
		if err != nil {
			c.heapOne()
			return
		}
		c.nlarge++
		c.heapCur = true
		*h = typedHead{cur: p, len: 1, cap: 1, n: 1}
		return
	}
	ch, err := c.takeChunk(&c.s, size)
	if err != nil {
		c.heapOne()
		return
	}
	*h = typedHead{cur: ch.p, len: int(ch.size / size), cap: int(ch.size / size), n: int(ch.size / size)}
}

// heapOne makes the current chunk one object from the Go heap, New's
// fallback when the budget refuses the memory.
func (c *tcore) heapOne() {
	c.fallbacks++
	c.allocs++
	c.heapCur = true
	*c.head() = typedHead{cur: c.s.info.newChunk(c.s.info.size), len: 1, cap: 1, n: 1}
}

// retireCur moves the current chunk to the full chunks, or drops it if it
// is a heap fallback.
func (c *tcore) retireCur() {
	h := c.head()
	if c.heapCur {
		c.heapCur = false
	} else if h.cur != nil {
		c.retired += h.next + c.adj
		c.adj = 0
		c.sync()
		c.s.retire()
	}
	*h = typedHead{}
}

// alloc is the slow path of TryNew and MakeSlice: n zeroed elements, with
// a fallback to the heap if fallback is set and the budget is exhausted.
// It publishes the statistics when due (see stats.go).
func (c *tcore) alloc(n int, fallback bool) (unsafe.Pointer, error) {
	c.check("New")
	ev := c.events()
	p, err := c.allocMore(n, fallback)
	if c.due(ev) {
		c.publish()
	}
	return p, err
}

// allocMore is alloc but for checking and publishing.
func (c *tcore) allocMore(n int, fallback bool) (unsafe.Pointer, error) {
	size := c.s.info.size
	if size > 0 && uintptr(n) > maxBytes/size {
		panic(msgTooLarge)
	}
	nb := uintptr(n) * size
	if err := checkSystem(nb, fallback); err != nil {
		c.failures++
		return nil, err
	}
	if nb == 0 {
		c.zeroObjs++
		return unsafe.Pointer(&zeroBase), nil
	}
	h := c.head()
	if c.s.isLarge(nb) {
		p, err := c.allocLarge(&c.s, nb)
		if err == nil {
			c.nlarge++
			return p, nil
		}
		return c.fail(nb, fallback, err)
	}
	if !c.heapCur && h.cur != nil && n <= h.n-h.next {
		p := unsafe.Add(h.cur, uintptr(h.next)*size)
		h.next += n
		c.adj += 1 - n
		if checked.Enabled {
			unpoison(c.s.info, p, nb)
		}
		return p, nil
	}
	ch, err := c.takeChunk(&c.s, nb)
	if err != nil {
		return c.fail(nb, fallback, err)
	}
	c.retireCur()
	*h = typedHead{cur: ch.p, len: int(ch.size / size), cap: int(ch.size / size), n: int(ch.size / size)}
	h.next = n
	c.adj += 1 - n
	if checked.Enabled {
		unpoison(c.s.info, ch.p, nb)
	}
	return ch.p, nil
}

func (c *tcore) fail(nb uintptr, fallback bool, err error) (unsafe.Pointer, error) {
	if !fallback {
		c.failures++
		return nil, err
	}
	c.fallbacks++
	c.allocs++
	return c.s.info.newChunk(nb), nil
}

// objects is the number of objects handed out since the last Reset.
func (c *tcore) objects() int {
	n := c.retired + c.nlarge + c.zeroObjs
	if !c.heapCur {
		n += c.head().next + c.adj
	}
	return n
}

// Reset frees every object of the arena at once and keeps its memory for
// reuse, as [Arena.Reset] does: the memory the objects used is zeroed,
// chunks unused since the previous Reset go to the shared recycler, and
// dedicated allocations are dropped. It panics if the arena was freed.
func (t *Typed[T]) Reset() {
	if checked.Enabled {
		t.c.check("Reset")
		t.c.freeing("Reset")
	}
	t.c.reset()
	t.c.publish()
}

func (c *tcore) reset() {
	c.check("Reset")
	c.endCycle()
	if c.s.info.size == 0 {
		*c.head() = typedHead{}
		return
	}
	if c.heapCur {
		c.heapCur = false
		*c.head() = typedHead{}
	}
	c.sync()
	c.resetLane(&c.s)
	c.unsync()
	c.dropLarge()
}

func (c *tcore) endCycle() {
	objs := uint64(c.objects())
	c.allocs += objs
	c.frees += objs
	c.retired, c.adj, c.nlarge, c.zeroObjs = 0, 0, 0, 0
}

// Free frees every object of the arena and gives its memory to the shared
// recycler, as [Arena.Free] does. Any later call on the arena, Free
// included, panics with "memkit/arena: use of freed arena", except
// ReadStats and PublishStats.
func (t *Typed[T]) Free() {
	if checked.Enabled {
		t.c.check("Free")
		t.c.freeing("Free")
	}
	t.c.free()
	t.c.publish()
}

func (c *tcore) free() {
	c.check("Free")
	c.endCycle()
	if c.heapCur {
		c.heapCur = false
		*c.head() = typedHead{}
	}
	if c.s.info.size > 0 {
		c.sync()
		c.freeLane(&c.s)
	}
	*c.head() = typedHead{}
	c.dropLarge()
	c.freed = true
}
