package extent

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/internal/shard"
)

// A Shared's front cache (see [Shared]): per size class up to frontMax, an
// idle set (internal/shard's Idle) of fixed-size chunks carved from
// segments, each segment one ordinary Malloc of a shard's Allocator, so
// that the coalescing allocator owns all memory and its figures hold. A
// warm Malloc of up to frontMax bytes takes an idle chunk's ticket and a
// whole Free puts it back, neither with a lock nor a locked instruction;
// Free finds the chunk in a copy-on-write table of the segments, read
// without a lock. Anything else on a chunk's memory — a partial Free,
// FreeRest, a Free spanning chunks — first detaches the chunk under its
// shard's lock: its unused tail goes back to the Allocator, its live bytes
// stay an ordinary allocation there, and the Allocator's own Free serves
// it and every later Free of it, with its exact semantics.

// frontMax is the largest Malloc the front cache serves.
const frontMax = 64 << 10

// nFront is the number of front classes: 16 to 128 bytes in steps of 16,
// then four per doubling up to frontMax.
const nFront = 8 + 4*9

// segSpan is the most bytes of a segment: a class's chunks per segment are
// segSpan/size, 1 to segChunks.
const (
	segSpan   = 64 << 10
	segChunks = 32
)

var (
	frontSizes [nFront]uint32
	// frontClass[(n+15)>>4] is the class of a Malloc of n bytes, 1 <= n <=
	// frontMax.
	frontClass [frontMax>>4 + 1]uint8
)

func init() {
	c := 0
	for s := 16; s <= 128; s += 16 {
		frontSizes[c] = uint32(s)
		c++
	}
	for base := 128; base < frontMax; base *= 2 {
		for k := 1; k <= 4; k++ {
			frontSizes[c] = uint32(base + k*base/4)
			c++
		}
	}
	c = 0
	for i := 1; i < len(frontClass); i++ {
		for int(frontSizes[c]) < i*16 {
			c++
		}
		frontClass[i] = uint8(c)
	}
}

// The states of a chunk.
const (
	chunkFront    = iota // the idle set's: idle, or out with its ticket in its slot
	chunkDetached        // out of the front cache: its memory is the Allocator's
	chunkGone            // given back to the Allocator by a sweep
)

// chunkRec is a chunk's record: its slot in its class's idle set, where it
// is, and the size of the Malloc it serves while out. The idle set's key of
// a chunk is the address of its record, which its segment keeps alive (and
// the Shared keeps the segment while any ticket of its chunks may be
// recovered: see Shared.retire).
type chunkRec struct {
	slot  shard.Slot     // first: a ticket's slot is its record
	ptr   unsafe.Pointer // the chunk's first byte
	seg   *segment
	idle  *shard.Idle   // its class's idle set (the segment's), one load nearer for Free
	size  int           // the bytes handed out, written by Malloc
	state atomic.Uint32 // chunkFront, chunkDetached or chunkGone; written under the shard's lock
	frees uint32        // whole Frees back into the set; plain, atomic under the race detector
	_     [64 - 16 - 4*unsafe.Sizeof(uintptr(0)) - 8]byte
}

// countFree counts a Free of r's chunk back into its set.
func (r *chunkRec) countFree() {
	if race.Enabled {
		atomic.AddUint32(&r.frees, 1)
		return
	}
	r.frees++
}

// recOf returns the record whose address is key (the idle set keeps keys
// as uintptrs; the record is on the Go heap, which does not move).
func recOf(key uintptr) *chunkRec { return (*chunkRec)(*(*unsafe.Pointer)(unsafe.Pointer(&key))) }

// segment is one Malloc of a shard's Allocator carved into chunks of one
// class.
type segment struct {
	base, span uintptr
	cs         uintptr // chunk size
	recip      uint64  // ^uint64(0)/cs + 1: off/cs is the high word of off*recip
	sh         *sharedShard
	idle       *shard.Idle
	recs       []chunkRec
	inTable    bool // under the Shared's segMu
	// Under the shard's lock: chunks in the chunkFront state, and tickets
	// dropped at a detach whose cleanup has not yet been swept.
	live, dead int
}

// rec returns the record of the chunk holding p, base <= p < base+span.
func (sg *segment) rec(p uintptr) *chunkRec {
	i, _ := bits.Mul64(uint64(p-sg.base), sg.recip)
	return &sg.recs[i]
}

// segTable is the segments in the front cache by base address, built
// anew whenever one comes or goes and read without a lock. Segments may
// overlap where the chunks of one went back to the Allocator and a later
// segment reuses their memory; at most one has a chunk in the chunkFront
// state at any address.
type segTable struct {
	bases []uintptr
	segs  []*segment
}

// chunkTable finds the record of a chunk from its address in a few
// instructions, for Free: an open-addressing hash table whose entry for
// address p is the one at shard.Mix(p)>>shift or, when that is taken, the
// next free one. Readers take no lock; entries are added under the
// Shared's segMu, each with two atomic stores (the record, then the
// address), and never removed: a chunk's entry may be stale (its record
// says whether the chunk is still in the front cache) until the table is
// built anew, when its entries in use reach half its size. A reader of a
// table just replaced may miss a chunk, which sends its Free to the slow
// path.
type chunkTable struct {
	shift uint
	mask  uintptr
	used  int // entries taken, under segMu
	ents  []chunkEnt
}

// chunkEnt is an entry of a chunkTable: a chunk's address (0 for none)
// and its record.
type chunkEnt struct {
	p atomic.Uintptr
	r atomic.Pointer[chunkRec]
}

// newChunkTable returns a table of the chunkFront chunks of segs with room
// for as many again.
func newChunkTable(segs []*segment) *chunkTable {
	n := 0
	for _, sg := range segs {
		n += len(sg.recs)
	}
	b := uint(6)
	for 1<<b < 4*n {
		b++
	}
	t := &chunkTable{shift: bits.UintSize - b, mask: 1<<b - 1, ents: make([]chunkEnt, 1<<b)}
	for _, sg := range segs {
		t.addSeg(sg)
	}
	return t
}

// addSeg adds the chunkFront chunks of sg, under segMu, and reports
// whether the table is still less than half full.
func (t *chunkTable) addSeg(sg *segment) bool {
	for i := range sg.recs {
		if r := &sg.recs[i]; r.state.Load() == chunkFront {
			t.add(r)
		}
	}
	return 2*t.used < len(t.ents)
}

// add adds the chunk of r, under segMu, in the entry of its address.
func (t *chunkTable) add(r *chunkRec) {
	p := uintptr(r.ptr)
	for i := shard.Mix(p) >> t.shift; ; i = (i + 1) & t.mask {
		e := t.at(i)
		switch e.p.Load() {
		case p:
			e.r.Store(r)
			return
		case 0:
			e.r.Store(r)
			e.p.Store(p)
			t.used++
			return
		}
	}
}

// at returns entry i, i <= t.mask, without a bounds check.
func (t *chunkTable) at(i uintptr) *chunkEnt {
	return (*chunkEnt)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(t.ents)), i*unsafe.Sizeof(chunkEnt{})))
}

// probe returns the record of the chunk at address p, if the table has
// one, and otherwise nil (its state may have changed since), looking past
// entry i, the first one tried, which Free tries inline.
func (t *chunkTable) probe(i, p uintptr) *chunkRec {
	for {
		i = (i + 1) & t.mask
		e := t.at(i)
		switch e.p.Load() {
		case p:
			return e.r.Load()
		case 0:
			return nil
		}
	}
}

// with returns a copy of t with sg in it.
func (t *segTable) with(sg *segment) *segTable {
	i := 0
	for i < len(t.bases) && t.bases[i] <= sg.base {
		i++
	}
	return &segTable{
		bases: append(append(append(make([]uintptr, 0, len(t.bases)+1), t.bases[:i]...), sg.base), t.bases[i:]...),
		segs:  append(append(append(make([]*segment, 0, len(t.segs)+1), t.segs[:i]...), sg), t.segs[i:]...),
	}
}

// without returns a copy of t without sg.
func (t *segTable) without(sg *segment) *segTable {
	n := &segTable{bases: make([]uintptr, 0, len(t.bases)), segs: make([]*segment, 0, len(t.segs))}
	for i, x := range t.segs {
		if x != sg {
			n.bases = append(n.bases, t.bases[i])
			n.segs = append(n.segs, x)
		}
	}
	return n
}

// frontSet is the idle sets of the classes (the array is larger than
// nFront so that a class masked with 63 needs no bounds check).
type frontSet struct {
	idle [64]*shard.Idle
}

func newFrontSet() *frontSet {
	f := &frontSet{}
	for c := range nFront {
		f.idle[c] = shard.NewIdle(func(key uintptr) *shard.Slot { return &recOf(key).slot })
	}
	return f
}

// get takes an idle chunk for a Malloc of n bytes, 1 <= n <= frontMax, or
// returns nil when its class has none (or the ticket it got was a detached
// chunk's: the caller tries again). Malloc has a copy of it inline.
func (s *Shared) get(f *frontSet, n int) []byte {
	t := f.idle[frontClass[(n+15)>>4]&63].Get()
	if t == nil {
		return nil
	}
	r := recOf(t.Key())
	if r.state.Load() != chunkFront {
		s.discard(r)
		return nil
	}
	r.size = n
	return unsafe.Slice((*byte)(r.ptr), n)
}

// discard drops the ticket the idle set made for a detached chunk's
// recovered key (see Shared.detach): its cleanup brings the key back, for
// the sweep.
//
//go:noinline
func (s *Shared) discard(r *chunkRec) {
	r.slot.Take()
	s.discards.Add(1)
}

// mallocFront serves a Malloc of n bytes, 1 <= n <= frontMax, whose class
// had no idle chunk: it carves a segment and takes a chunk of it. It
// returns nil when the shard's Allocator cannot give a segment.
func (s *Shared) mallocFront(f *frontSet, n int) []byte {
	for {
		if b := s.get(f, n); b != nil {
			return b
		}
		if !s.refill(f, int(frontClass[(n+15)>>4])) {
			return nil
		}
	}
}

// refill carves a segment of class c from the calling goroutine's shard
// and makes its chunks idle, or reports false if the Allocator refuses it.
func (s *Shared) refill(f *frontSet, c int) bool {
	cs := uintptr(frontSizes[c])
	k := min(max(segSpan/cs, 1), segChunks)
	sh := s.home()
	mem := func() []byte {
		sh.Lock.Lock()
		defer sh.Unlock()
		b, err := sh.a.TryMalloc(int(k * cs))
		if err != nil {
			return nil
		}
		sh.segAllocs++
		return b
	}()
	if mem == nil {
		return false
	}
	sg := &segment{base: sliceAddr(mem), span: k * cs, cs: cs, recip: ^uint64(0)/uint64(cs) + 1,
		sh: sh, idle: f.idle[c], recs: make([]chunkRec, k), live: int(k), inTable: true}
	for i := range sg.recs {
		sg.recs[i].ptr = unsafe.Pointer(&mem[uintptr(i)*cs])
		sg.recs[i].seg = sg
		sg.recs[i].idle = sg.idle
	}
	s.segMu.Lock()
	t := s.segs.Load().with(sg)
	s.segs.Store(t)
	if !s.chunks.Load().addSeg(sg) {
		s.chunks.Store(newChunkTable(t.segs))
	}
	s.all[sg] = struct{}{}
	s.segMu.Unlock()
	for i := len(sg.recs) - 1; i >= 0; i-- {
		sg.idle.Add(uintptr(unsafe.Pointer(&sg.recs[i])))
	}
	return true
}

// touching calls f with the record of every chunkFront chunk that [p, e)
// touches, p < e.
func (t *segTable) touching(p, e uintptr, f func(r *chunkRec)) {
	lo, hi := 0, len(t.bases)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.bases[m] < e {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for j := lo - 1; j >= 0 && (t.bases[j] >= p || p-t.bases[j] < segSpan); j-- {
		sg := t.segs[j]
		for q, end := max(p, sg.base), min(e, sg.base+sg.span); q < end; {
			r := sg.rec(q)
			if r.state.Load() == chunkFront {
				f(r)
			}
			q = uintptr(r.ptr) + sg.cs
		}
	}
}

// freeFront is Free of b, in the Shared's slow path: if b touches chunks
// of the front cache it frees b and reports true, otherwise it reports
// false and the caller frees b as an Allocator's. Under the shard's lock a
// chunk b touches that is idle is a double free; the chunk of a whole Free
// goes back to its idle set; any other chunk b touches is detached (see
// detach) and the Allocator frees b.
func (s *Shared) freeFront(b []byte) bool {
	p := sliceAddr(b)
	e := p + uintptr(len(b))
	var sh *sharedShard
	s.segs.Load().touching(p, e, func(r *chunkRec) {
		if sh == nil {
			sh = r.seg.sh
		}
	})
	if sh == nil {
		return false
	}
	sh.Lock.Lock()
	defer sh.Unlock()
	t := s.segs.Load()
	var whole *chunkRec
	n := 0
	t.touching(p, e, func(r *chunkRec) {
		if r.seg.sh != sh {
			return // another shard's: the Allocator reports b foreign
		}
		if !r.slot.Out() {
			sh.a.badFree()
			panic(errDoubleFree)
		}
		if n++; uintptr(r.ptr) == p && len(b) == r.size {
			whole = r
		}
	})
	if whole != nil && n == 1 {
		if tk := whole.slot.Take(); tk != nil {
			whole.countFree()
			whole.idle.Put(tk)
			return true
		}
	}
	t.touching(p, e, func(r *chunkRec) {
		if r.seg.sh == sh {
			s.detach(r)
		}
	})
	sh.a.Free(b)
	return true
}

// detach takes out chunk r, under its shard's lock, from the front cache:
// its ticket is dropped, the bytes past its Malloc go back to the
// Allocator, and its live bytes stay an ordinary allocation there. The
// dropped ticket's cleanup brings its key back to the idle set after a
// GC, where the sweep (or a Get, see discard) finds it detached; until the
// sweep has, the Shared keeps the segment (its records hold the keys).
func (s *Shared) detach(r *chunkRec) {
	sg := r.seg
	r.slot.Take()
	r.state.Store(chunkDetached)
	sg.live--
	sg.dead++
	if rest := sg.cs - uintptr(r.size); rest > 0 {
		sg.sh.a.Free(unsafe.Slice((*byte)(unsafe.Add(r.ptr, r.size)), rest))
		sg.sh.segFrees++
	}
	s.retire(sg)
}

// retire drops sg, under its shard's lock, from the table once no chunk of
// it is in the front cache, and from the Shared once no dropped ticket of
// it may come back either.
func (s *Shared) retire(sg *segment) {
	if sg.live > 0 {
		return
	}
	s.segMu.Lock()
	defer s.segMu.Unlock()
	if t := s.segs.Load(); sg.inTable {
		sg.inTable = false
		s.segs.Store(t.without(sg))
	}
	if sg.dead == 0 {
		if _, ok := s.all[sg]; ok {
			delete(s.all, sg)
			s.retiredGets += sg.gets()
			s.retiredFrees += sg.frees()
		}
	}
}

// gets and frees sum the Gets and whole Frees of sg's chunks.
func (sg *segment) gets() (n uint64) {
	for i := range sg.recs {
		n += sg.recs[i].slot.Gets()
	}
	return n
}

func (sg *segment) frees() (n uint64) {
	for i := range sg.recs {
		n += uint64(atomic.LoadUint32(&sg.recs[i].frees))
	}
	return n
}

// sweep takes the keys the idle sets hold without a ticket — chunks idle
// across two GCs, chunks carved and not yet taken, and detached chunks
// whose dropped ticket came back — and gives the idle chunks back to their
// Allocators, each under its shard's lock. So a chunk idle since a GC is
// back in its Allocator by the end of the third GC after its Free.
func (s *Shared) sweep() {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	f := s.front
	for c := range nFront {
		s.keys = f.idle[c].TakeSpare(s.keys[:0])
		for _, key := range s.keys {
			r := recOf(key)
			sg := r.seg
			sh := sg.sh
			sh.Lock.Lock()
			switch r.state.Load() {
			case chunkFront:
				r.state.Store(chunkGone)
				sg.live--
				sh.a.Free(unsafe.Slice((*byte)(r.ptr), sg.cs))
				sh.segFrees++
			case chunkDetached:
				sg.dead--
			}
			s.retire(sg)
			sh.Unlock()
		}
	}
	s.alert.Notify()
}
