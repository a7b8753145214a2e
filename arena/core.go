package arena

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
)

// core is the bookkeeping an Arena and a Typed share: configuration,
// budget and account, dedicated allocations, counters.
type core struct {
	cfg      config
	inited   bool
	freed    bool
	reserved uint64
	acct     *account // nil unless the arena reports to a pool or an account

	large      []chunk // dedicated allocations, dropped at Reset
	largeBytes uintptr

	allocs, frees, fallbacks, failures, grows, releases uint64
	spares                                              uint64 // spare chunks taken, for events

	pub published // what ReadStats shows other goroutines (see stats.go)

	dbg *coreDebug // the checked build's state; nil otherwise
}

// lane is the chunks of one element type (or, in an Arena, of every
// pointer-free type): a current chunk bumped through, the chunks filled
// before it since the last Reset, and chunks kept for reuse.
type lane struct {
	base     unsafe.Pointer // current chunk; nil when there is none
	off, lim uintptr        // bytes used and size of the current chunk
	info     *typeInfo
	std      uintptr    // size of a standard chunk, the one recycled
	rec      *sync.Pool // idle standard chunks shared by all arenas
	full     []chunk    // chunks filled since the last Reset
	fullUsed uintptr    // bytes used in full
	spare    []chunk    // zeroed (or poisoned) chunks kept for reuse
}

type chunk struct {
	p          unsafe.Pointer
	size, used uintptr
	info       *typeInfo // of a dedicated allocation
}

func (s *lane) init(ti *typeInfo, chunkSize uintptr) {
	*s = lane{info: ti}
	if ti.size == 0 {
		return
	}
	s.std = chunkSize - chunkSize%ti.size
	if ti == noscanInfo {
		s.std = (chunkSize + 7) &^ 7
	}
	s.rec = ti.recycler(s.std)
}

// isLarge reports whether a request of nb bytes gets an allocation of its
// own instead of a place in a chunk: more than a quarter of a chunk.
func (s *lane) isLarge(nb uintptr) bool { return nb > s.std/4 || s.std == 0 }

// inUse is the bytes s handed out since the last Reset.
func (s *lane) inUse() uintptr {
	if s.base == nil {
		return s.fullUsed
	}
	return s.fullUsed + s.off
}

// bump returns nb bytes aligned to align from the current chunk of s, or
// nil if they do not fit.
func (s *lane) bump(nb, align uintptr) unsafe.Pointer {
	off := (s.off + align - 1) &^ (align - 1)
	if s.base == nil || off+nb > s.lim || nb == 0 {
		return nil
	}
	s.off = off + nb
	p := unsafe.Add(s.base, off)
	if checked.Enabled {
		unpoison(s.info, p, nb)
	}
	return p
}

// alloc returns nb > 0 zeroed bytes aligned to align from s: in the
// current chunk, in a new one, or, for a large request, in a dedicated
// allocation. It returns an error, leaving everything unchanged, if the
// budget or the account refuses the memory.
func (c *core) alloc(s *lane, nb, align uintptr) (unsafe.Pointer, error) {
	if p := s.bump(nb, align); p != nil {
		return p, nil
	}
	if s.isLarge(nb) {
		return c.allocLarge(s, nb)
	}
	ch, err := c.takeChunk(s, nb)
	if err != nil {
		return nil, err
	}
	s.retire()
	s.base, s.off, s.lim = ch.p, 0, ch.size
	return s.bump(nb, align), nil
}

// allocLarge returns a dedicated allocation of nb bytes of the type of s.
func (c *core) allocLarge(s *lane, nb uintptr) (unsafe.Pointer, error) {
	if err := c.reserve(nb); err != nil {
		return nil, err
	}
	p := s.info.newChunk(nb)
	if checked.Enabled {
		chunkTaken(p, nb, true)
	}
	c.large = append(c.large, chunk{p: p, size: nb, info: s.info})
	c.largeBytes += nb
	c.grows++
	return p, nil
}

// retire moves the current chunk of s to its full chunks.
func (s *lane) retire() {
	if s.base != nil {
		s.full = append(s.full, chunk{p: s.base, size: s.lim, used: s.off})
		s.fullUsed += s.off
		s.base, s.off, s.lim = nil, 0, 0
	}
}

// takeChunk returns a zeroed (or, under memkitdebug, poisoned) chunk of at
// least nb bytes for s: a spare one, one from the shared recycler, a new
// one, or, near the budget, a smaller new one.
func (c *core) takeChunk(s *lane, nb uintptr) (chunk, error) {
	// A spare chunk too small for nb (one made small near the budget) stays
	// spare; Reset gives it up if no request used it.
	if n := len(s.spare); n > 0 && s.spare[n-1].size >= nb {
		ch := s.spare[n-1]
		s.spare[n-1] = chunk{}
		s.spare = s.spare[:n-1]
		c.spares++
		return ch, nil
	}
	size := s.std
	if limit := uint64(c.cfg.Limit()); limit > 0 && c.reserved+uint64(size) > limit {
		left := uintptr(limit - min(c.reserved, limit))
		size = left - left%s.info.size
		if s.info == noscanInfo {
			size &^= 7
		}
		if size < nb {
			return chunk{}, ErrBudget
		}
	}
	if err := c.reserve(size); err != nil {
		return chunk{}, err
	}
	c.grows++
	if size == s.std {
		if v := s.rec.Get(); v != nil {
			if checked.Enabled {
				chunkTaken(v.(unsafe.Pointer), size, false)
			}
			return chunk{p: v.(unsafe.Pointer), size: size}, nil
		}
	}
	p := s.info.newChunk(size)
	if checked.Enabled {
		chunkTaken(p, size, true)
		poison(s.info, p, size)
	}
	return chunk{p: p, size: size}, nil
}

// reserve accounts for n more bytes held by the arena, or returns an error
// if the budget or the account refuses them.
func (c *core) reserve(n uintptr) error {
	if limit := uint64(c.cfg.Limit()); limit > 0 && c.reserved+uint64(n) > limit {
		return ErrBudget
	}
	if c.acct != nil {
		if err := c.acct.add(int64(n)); err != nil {
			return fmt.Errorf("%w: %w", ErrBudget, err)
		}
	}
	c.reserved += uint64(n)
	return nil
}

// release accounts for a chunk of n bytes the arena gave up.
func (c *core) release(n uintptr) {
	c.reserved -= uint64(n)
	c.releases++
	if c.acct != nil {
		c.acct.add(-int64(n))
	}
}

// recycle gives a zeroed chunk of s up: a standard one to the shared
// recycler, another to the GC.
func (c *core) recycle(s *lane, ch chunk) {
	if ch.size == s.std {
		s.rec.Put(ch.p)
	}
	c.release(ch.size)
}

// resetLane zeroes what s handed out, gives up the chunks it kept but did
// not use since the previous Reset, and keeps the others for reuse, in the
// order they were used.
func (c *core) resetLane(s *lane) {
	if checked.Enabled {
		c.notePoisoned(s)
	}
	for _, ch := range s.spare {
		c.recycle(s, ch)
	}
	clear(s.spare)
	s.spare = s.spare[:0]
	s.clearUsed()
	if len(s.full) == 0 {
		if s.base != nil && s.off == 0 { // unused for a whole cycle
			c.recycle(s, chunk{p: s.base, size: s.lim})
			s.base, s.lim = nil, 0
		}
		s.off = 0
		return
	}
	// The first chunk becomes current; the others are spare, popped in
	// the order they were filled.
	if s.base != nil {
		s.spare = append(s.spare, chunk{p: s.base, size: s.lim})
	}
	for i := len(s.full) - 1; i >= 0; i-- {
		s.spare = append(s.spare, s.full[i])
		s.full[i] = chunk{}
	}
	s.full, s.fullUsed = s.full[:0], 0
	first := s.spare[len(s.spare)-1]
	s.spare[len(s.spare)-1] = chunk{}
	s.spare = s.spare[:len(s.spare)-1]
	s.base, s.off, s.lim = first.p, 0, first.size
}

// freeLane zeroes what s handed out and gives up all its chunks.
func (c *core) freeLane(s *lane) {
	if checked.Enabled {
		c.notePoisoned(s)
	}
	s.clearUsed()
	if s.base != nil {
		c.recycle(s, chunk{p: s.base, size: s.lim})
	}
	for _, ch := range s.full {
		c.recycle(s, ch)
	}
	for _, ch := range s.spare {
		c.recycle(s, ch)
	}
	*s = lane{info: s.info}
}

// clearUsed zeroes (and poisons, under memkitdebug) the memory s handed
// out since the last Reset, so that the pointers it held keep nothing
// alive, and marks it unused.
func (s *lane) clearUsed() {
	if s.base != nil && s.off > 0 {
		s.info.clear(s.base, s.off)
		if checked.Enabled {
			poison(s.info, s.base, s.off)
		}
	}
	for i := range s.full {
		ch := &s.full[i]
		s.info.clear(ch.p, ch.used)
		if checked.Enabled {
			poison(s.info, ch.p, ch.used)
		}
		ch.used = 0
	}
}

// dropLarge gives the dedicated allocations up to the GC, cleared if they
// may hold pointers, so that a stale reference to one keeps nothing else
// alive.
func (c *core) dropLarge() {
	if len(c.large) == 0 {
		return
	}
	for _, l := range c.large {
		if l.info.ptrs {
			l.info.clear(l.p, l.size)
		}
	}
	n := c.largeBytes
	c.releases += uint64(len(c.large))
	clear(c.large)
	c.large, c.largeBytes = c.large[:0], 0
	c.reserved -= uint64(n)
	if c.acct != nil {
		c.acct.add(-int64(n))
	}
}

// account is where an arena reports the memory it holds when something
// outside it keeps count: a WithAccount function, a Pool's gauge, or both.
// It is an object of its own, not reachable from the arena's cleanup
// otherwise, so that the cleanup can report an arena the GC collected
// without a Free.
type account struct {
	held  int64 // bytes the arena holds, as last reported
	f     func(delta int64) error
	pool  *poolStats
	alert *budget.Budget // the arena's WithBudgetAlert, or nil
}

// newAccount returns an account for the arena (or Typed) at ptr, which the
// GC reports as released when it collects ptr.
func newAccount[T any](ptr *T, f func(int64) error, ps *poolStats, alert *budget.Budget) *account {
	acct := &account{f: f, pool: ps, alert: alert}
	runtime.AddCleanup(ptr, (*account).dropped, acct)
	return acct
}

func (c *account) add(delta int64) error {
	if c.f != nil {
		if err := c.f(delta); err != nil && delta > 0 {
			return err
		}
	}
	c.held += delta
	if c.pool != nil {
		c.pool.reserved.Add(delta)
		charge(c.pool.alert, delta)
	}
	charge(c.alert, delta)
	return nil
}

// charge charges delta bytes to b, or releases -delta; a nil b is no
// budget.
func charge(b *budget.Budget, delta int64) {
	if delta > 0 {
		b.Charge(delta)
	} else {
		b.Release(-delta)
	}
}

// dropped reports the memory of an arena that the GC collected.
func (c *account) dropped() {
	if c.held == 0 {
		return
	}
	if c.pool != nil {
		c.pool.releases.Add(1)
	}
	c.add(-c.held)
}
