package arena

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/stats"
)

// Pool is a pool of arenas for per-request use in servers: a goroutine
// takes an arena with [Pool.Get], allocates the request's objects in it,
// and gives it back with [Pool.Put], which resets it, so that the next
// request, on any goroutine, reuses its chunks instead of taking new ones
// from the heap.
//
// A Pool is safe for concurrent use by multiple goroutines; each arena it
// hands out is for one goroutine at a time. A Pool must be created with
// [NewPool] and must not be copied after first use. Get and Put cost what
// a [sync.Pool] Get and Put cost plus, for Put, the arena's Reset; neither
// allocates once the pool holds idle arenas. Idle arenas and their memory
// are dropped by the GC over time, as a sync.Pool's items are.
//
// In the checked build (-tags memkitdebug) a Put of an arena not from this
// pool's Get, a second Put, and the use of an arena after its Put are
// reported with the stacks of the calls involved; memkit.Leaks of a Pool
// lists the arenas Get handed out and neither put back nor freed, with the
// stack of each Get. Get and Put then record a stack each and cost
// microseconds, and New costs two to ten times what it does in a release
// build, as every byte handed out is checked for poison.
type Pool struct {
	p   sync.Pool
	cfg config
	st  *poolStats
	trk *checked.Tracker // the checked build's arenas out of the pool; nil otherwise
}

// poolStats are a Pool's counters, shared with the accounts of its arenas.
type poolStats struct {
	reserved                                            atomic.Int64
	allocs, frees, fallbacks, failures, grows, releases atomic.Uint64
	alert                                               *budget.Budget // the pool's WithBudgetAlert, or nil
}

// NewPool returns a pool of arenas configured by opts, which apply to
// every arena of the pool (a [WithBudget] budget is per arena; a
// [WithBudgetAlert] alert is for the pool, on the memory all its arenas
// hold, so its threshold may be above the budget). It panics if an option
// is out of range.
func NewPool(opts ...Option) *Pool {
	cfg := newConfig(opts, true)
	p := &Pool{cfg: cfg, st: &poolStats{alert: cfg.alert}}
	p.cfg.alert = nil // the arenas report to the pool's
	if checked.Enabled {
		p.trk = checked.NewTracker("arena")
		checked.Register(p, p.trk)
	}
	return p
}

// Get returns an empty arena of the pool: an idle one if there is one,
// else a new one.
func (p *Pool) Get() *Arena {
	if p.st == nil {
		panic(msgNoPool)
	}
	if v := p.p.Get(); v != nil {
		a := v.(*Arena)
		a.pooled = false
		if checked.Enabled {
			p.trk.Alloc(uintptr(unsafe.Pointer(a)), int(a.reserved), 1)
		}
		return a
	}
	a := &Arena{pool: p}
	a.init(p.cfg)
	if a.acct == nil {
		a.acct = newAccount(a, nil, p.st, nil)
	} else {
		a.acct.pool = p.st
	}
	if checked.Enabled {
		p.trk.Alloc(uintptr(unsafe.Pointer(a)), int(a.reserved), 1)
	}
	return a
}

// Put resets a, as [Arena.Reset] does, and makes it available to Get. Its
// objects and a itself must not be used afterwards: Get hands a to its next
// owner as it is, so a second Put of a after that is not seen by the
// release build (it resets the next owner's arena); the checked build
// keeps put arenas out of reuse for the next 4096 Puts and reports a
// second Put meanwhile as a double free, with the stacks of the Get and of
// the first Put. Put panics with
// "memkit/arena: Put of an arena not from this pool" if a did not come
// from p's Get, with "memkit/arena: Put of an arena already in the pool"
// if a was put back since it came from Get, and with "memkit/arena: use of
// freed arena" if a was freed.
func (p *Pool) Put(a *Arena) {
	if a == nil || a.pool != p {
		if checked.Enabled {
			p.foreignPut(a)
		}
		panic(msgForeign)
	}
	if a.freed {
		if checked.Enabled {
			a.freedMisuse("Put", unsafe.Pointer(a))
		}
		panic(msgFreed)
	}
	var rec *checked.Record
	if checked.Enabled {
		rec = p.trk.Free("Put", uintptr(unsafe.Pointer(a)), 1) // panics for a second Put
		a.freeing("Put")
	}
	// A Put after the next Get (a stale Put: the first owner puts a back
	// while the next owner uses it) is not caught here, and no generation
	// can catch it in a release build with this API. A generation needs
	// two copies to compare: one the allocator bumps at Put, and one in
	// the handle the owner holds. Get and Put trade a bare *Arena, so the
	// handle is the pointer itself: both owners hold the same pointer, and
	// everything reachable from it is the arena's present state, the
	// second owner's. A stale Put and the second owner's Put are the same
	// call with the same argument; there is nothing to compare. Handing
	// out a different pointer per Get would give each owner a handle of
	// its own, but needs a fresh Arena per Get (an allocation), or, with
	// K Arena headers recycled over the same chunks, only delays the
	// header's reuse: a stale Put is then caught within the next K-1 Gets
	// of that header and missed after, at the cost of moving the header
	// (its lanes and type cache point into it) at every Put. The checked
	// build delays reuse that way, holding put arenas back for 4096 Puts.
	// Nor is the goroutine an owner: an arena may move between goroutines
	// with its request, and Go exposes no cheap goroutine identity. So the
	// release build catches only a Put while a is in the pool, with the
	// state bit below.
	if a.pooled {
		panic(msgPutTwice)
	}
	a.pooled = true
	a.reset()
	if checked.Enabled {
		// Every allocation takes the slow path, which reports the use
		// of an arena in the pool.
		a.cache = [cacheSize]cacheEntry{}
	}
	if checked.Enabled {
		// Out of reuse for a while, its chunks given up: a second Put
		// meanwhile is a double free with the stacks of the Get and the
		// first Put, not a Put of the next owner's arena.
		a.shed()
		p.count(a)
		a.publish()
		p.trk.Hold("Put", rec, nil, func() { p.p.Put(a) })
		return
	}
	p.count(a)
	a.publish()
	p.p.Put(a)
}

// count adds the counters of a, just reset, to the pool's.
func (p *Pool) count(a *Arena) {
	st := p.st
	st.allocs.Add(a.allocs)
	st.frees.Add(a.frees)
	st.fallbacks.Add(a.fallbacks)
	st.failures.Add(a.failures)
	st.grows.Add(a.grows)
	st.releases.Add(a.releases)
	a.allocs, a.frees, a.fallbacks, a.failures, a.grows, a.releases = 0, 0, 0, 0, 0, 0
}

// ReadStats overwrites *s with the pool's statistics: ReservedBytes is the
// memory held by all its arenas, in use or idle; the counters add up
// those of its arenas as of their last Put, and Releases also counts idle
// arenas the GC dropped. InUseBytes and LiveObjects, which only the
// goroutine using an arena knows, are 0: read them from the arena. It does
// not allocate.
func (p *Pool) ReadStats(s *stats.Stats) {
	s.Reset()
	st := p.st
	s.ReservedBytes = uint64(max(st.reserved.Load(), 0))
	s.Allocs = st.allocs.Load()
	s.Frees = st.frees.Load()
	s.HeapFallbacks = st.fallbacks.Load()
	s.Failures = st.failures.Load()
	s.Grows = st.grows.Load()
	s.Releases = st.releases.Load()
}

var _ stats.StatsSource = (*Pool)(nil)
