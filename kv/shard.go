package kv

import (
	"errors"
	"sync"
	"sync/atomic"
	"unsafe"

	padding "github.com/memkit/memkit/internal/shard"
	"github.com/memkit/memkit/offheap"
	"github.com/memkit/memkit/stats"
)

// Sizes of the storage.
const (
	segSize     = 256 << 10 // a segment of entries, without a small budget
	minSegSize  = 16 << 10  // the smallest, for a small budget
	hdrSize     = 8         // entry header: value length, key length, flags
	initSlots   = 512       // a shard's first index table: one 4 KiB page
	compactMin  = 64 << 10  // dead bytes a shard keeps before it compacts
	compactStep = 64 << 10  // bytes of entries one step of compaction reads
	deadShare   = 32        // and the share of its segments' bytes: 1/deadShare
	pageSize    = 4096      // the unit of what ReservedBytes counts
	maxSegs     = 1<<segBits - 1
)

// An index slot is one uint64: the entry's offset in its segment / 8 (16
// bits: segments up to 512 KiB), the segment (20 bits, 0 for an empty
// slot) and 28 bits of the key's hash, whose low bits are also the slot's
// home in the table.
const (
	offBits   = 16
	segBits   = 20
	locBits   = offBits + segBits
	tagBits   = 64 - locBits
	locMask   = 1<<locBits - 1
	tagMask   = 1<<tagBits - 1
	hashShift = 28 // the tag is bits 28..55 of the hash; the shard its top 8
)

// An entry's header: the value's length in the low 32 bits, the key's in
// the next 16, then flags: dead (deleted, overwritten or evicted), and,
// in a Map that evicts, read since it was stored or last spared; and in
// the top 14 bits, the low bits of the key's tag, which are its slot's home
// in a table of up to 1<<14 slots (a shard of up to 13,312 entries): so
// compaction and eviction find a moved entry's slot without hashing its key.
const (
	deadFlag    = 1 << 48
	readFlag    = 1 << 49
	hdrTagShift = 50
	hdrTagMask  = 1<<(64-hdrTagShift) - 1
)

// tagOf returns the tag of a key's hash.
func tagOf(h uint64) uint64 { return h >> hashShift & tagMask }

// loc returns the location part of a slot.
func loc(seg uint32, off int) uint64 { return uint64(off>>3) | uint64(seg)<<offBits }

// segOf and offOf undo loc: the segment and the offset slot v names.
func segOf(v uint64) uint32 { return uint32(v >> offBits & (1<<segBits - 1)) }
func offOf(v uint64) int    { return int(v&(1<<offBits-1)) << 3 }

// keyLen is the key's length in the entry header hdr.
func keyLen(hdr uint64) int { return int(hdr >> 32 & 0xFFFF) }

// spanOf returns the bytes an entry of a k-byte key and a v-byte value
// takes: the header and both, rounded up to 8.
func spanOf(k, v int) int { return (hdrSize + k + v + 7) &^ 7 }

// hdrSpan returns the span of the entry whose header is hdr.
func hdrSpan(hdr uint64) int { return spanOf(keyLen(hdr), int(uint32(hdr))) }

// segment is one piece of memory holding entries back to back.
type segment struct {
	mem     []byte // nil for a free segment number
	used    int    // bytes of entries, dead or alive, from the start
	touched int    // bytes from the start written since the pages were last given back
	dead    int    // bytes of dead entries
	seq     uint64 // when it last became the shard's current segment
	large   bool   // holds one entry larger than half a segment
	region  int    // the Map's region it was carved from; 0 for none
	// swept is where a compaction in progress continues: the entries
	// before it are slid down, and at it a dead filler entry spans the
	// room they left (see compactStep). 0 when no pass is under way.
	swept int
}

// shard is one lock's worth of the Map: an index and segments.
type shard struct {
	_  padding.Pad
	mu sync.RWMutex
	m  *Map

	closed bool
	tab    []uint64 // the index: a power-of-two table of slots
	tabMem []byte   // its memory
	mask   uint64
	count  atomic.Int64 // entries; written under mu, read by Len without it
	epoch  uint64       // changes whenever slots may have moved

	segs []segment // by number; 0 is never used
	// bases is each segment's first byte, by number (nil for none): what
	// find and value load to reach an entry, 8 bytes a segment against a
	// segment's 72, so that a Get's load of it hits the cache. (In a
	// 3M-entry Map, segs[k].mem's load was a sixth of find's samples.)
	bases   []unsafe.Pointer
	freeNum []uint32
	cur     uint32 // the segment Set appends to; 0 for none
	seq     uint64
	sweep   uint32 // the segment a compaction in progress works on; 0 for none
	sink    uint64 // what warm loaded, stored so that its loads are kept

	live, dead, used int // bytes of live entries, dead ones, all in normal segments
	slack            int // bytes touched past used in normal segments: resident, free to append to

	// Counters, written under mu.
	stores, frees, failures, grows, releases, evictions uint64
	_                                                   padding.Pad
}

// at returns the address of the entry slot v names.
func (s *shard) at(v uint64) unsafe.Pointer {
	return unsafe.Add(s.bases[segOf(v)], offOf(v))
}

// entry returns the memory of the segment of slot v and the entry's offset
// in it.
func (s *shard) entry(v uint64) ([]byte, int) {
	return s.segs[segOf(v)].mem, offOf(v)
}

// header returns the header of the entry at off of mem. The load is
// atomic because readers of an evicting Map set readFlag (touch) while
// other readers look at the header; a plain load costs the same.
func header(mem []byte, off int) uint64 {
	return headerAt(unsafe.Pointer(&mem[off : off+hdrSize][0]))
}

// headerAt is header for the entry at p (see shard.at).
func headerAt(p unsafe.Pointer) uint64 { return atomic.LoadUint64((*uint64)(p)) }

// touch marks the entry of slot v as read, for eviction's second chance:
// one atomic OR the first time after it was stored or spared, a load after.
func (s *shard) touch(v uint64) {
	mem, off := s.entry(v)
	p := (*uint64)(unsafe.Pointer(&mem[off : off+hdrSize][0]))
	if atomic.LoadUint64(p)&readFlag == 0 {
		atomic.OrUint64(p, readFlag)
	}
}

// setHeader writes the header of the entry at off of mem.
func setHeader(mem []byte, off int, hdr uint64) {
	*(*uint64)(unsafe.Pointer(&mem[off : off+hdrSize][0])) = hdr
}

// setFiller writes at off of mem a dead entry of span bytes (at least
// hdrSize), which covers room no entry holds: the end of an overwritten
// entry's place, or what a compaction step has slid entries out of.
func setFiller(mem []byte, off, span int) {
	setHeader(mem, off, deadFlag|uint64(span-hdrSize))
}

// keyOf returns the key of the entry at off of mem.
func keyOf(mem []byte, off int, hdr uint64) []byte {
	k := keyLen(hdr)
	return mem[off+hdrSize : off+hdrSize+k : off+hdrSize+k]
}

// value returns the value of the entry slot v names, in place, which its
// header bounds inside its segment (no bounds check).
func (s *shard) value(v uint64) []byte {
	p := s.at(v)
	hdr := headerAt(p)
	return unsafe.Slice((*byte)(unsafe.Add(p, hdrSize+keyLen(hdr))), int(uint32(hdr)))
}

// find returns the slot of key, whose hash is h, and its index in the
// table; or, if the key is absent, 0 and the index of the empty slot that
// ends its probe.
func (s *shard) find(h uint64, key []byte) (uint64, uint64) {
	if s.tab == nil {
		return 0, 0
	}
	tag := tagOf(h)
	want := tag << locBits
	for i := tag & s.mask; ; i = (i + 1) & s.mask {
		v := s.tab[i]
		if v == 0 {
			return i, 0
		}
		if v&^locMask == want {
			p := s.at(v)
			k := keyLen(headerAt(p))
			if string(unsafe.Slice((*byte)(unsafe.Add(p, hdrSize)), k)) == string(key) {
				return i, v
			}
		}
	}
}

// slotAt returns the table index of the slot that names the entry at off
// of segment seg, which is live. Its probe starts at the home the header
// holds, or, in a table too large for it, at the key's hash: the hash was
// a third of the time compaction spent moving an entry.
func (s *shard) slotAt(seg uint32, off int) uint64 {
	mem := s.segs[seg].mem
	hdr := header(mem, off)
	home := hdr >> hdrTagShift
	if s.mask > hdrTagMask {
		home = tagOf(s.m.hash(keyOf(mem, off, hdr)))
	}
	l := loc(seg, off)
	for i := home & s.mask; ; i = (i + 1) & s.mask {
		if s.tab[i]&locMask == l {
			return i
		}
	}
}

// removeAt empties slot i of the table, shifting back the slots after it
// whose probe passes through it, so that no tombstone is needed.
func (s *shard) removeAt(i uint64) {
	mask := s.mask
	for {
		s.tab[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			v := s.tab[j]
			if v == 0 {
				s.epoch++
				return
			}
			home := v >> locBits & mask
			if (j-home)&mask >= (j-i)&mask {
				s.tab[i] = v
				i = j
				break
			}
		}
	}
}

// set is Set under the shard's write lock.
func (s *shard) set(h uint64, key, value []byte) error {
	span := spanOf(len(key), len(value))
	i, v := s.find(h, key)
	if v != 0 {
		if s.overwrite(v, span, key, value) {
			return nil
		}
	} else if s.tab == nil || uint64(s.count.Load()+1) > (s.mask+1)/16*13 {
		if err := s.makeRoom(); err != nil {
			s.failures++
			return err
		}
		i, v = s.find(h, key)
	}
	epoch := s.epoch
	seg, off, err := s.reserve(span)
	if err != nil {
		s.failures++
		return err
	}
	if s.epoch != epoch { // compaction or eviction moved slots
		i, v = s.find(h, key)
	}
	mem := s.segs[seg].mem
	setHeader(mem, off, uint64(len(value))|uint64(len(key))<<32|tagOf(h)<<hdrTagShift)
	copy(mem[off+hdrSize:], key)
	copy(mem[off+hdrSize+len(key):], value)
	s.live += span
	s.stores++
	s.tab[i] = loc(seg, off) | tagOf(h)<<locBits
	if v != 0 {
		s.kill(v)
		s.maybeCompact()
	} else {
		s.count.Add(1)
	}
	return nil
}

// overwrite stores value in place of the entry of slot v, key's, if the
// new entry (of span bytes) fits in the old one's, and reports whether it
// did. The bytes left over become a dead filler entry, for compaction.
func (s *shard) overwrite(v uint64, span int, key, value []byte) bool {
	num := segOf(v)
	c := &s.segs[num]
	mem, off := s.entry(v)
	hdr := header(mem, off)
	old := hdrSpan(hdr)
	if span > old || c.large {
		return false
	}
	copy(mem[off+hdrSize+len(key):], value)
	setHeader(mem, off, uint64(len(value))|uint64(len(key))<<32|hdr&^(1<<hdrTagShift-1)) // and not read since
	if gap := old - span; gap > 0 {
		setFiller(mem, off+span, gap)
		c.dead += gap
		s.dead += gap
		s.live -= gap
	}
	s.stores++
	s.frees++
	s.maybeCompact()
	return true
}

// makeRoom grows the index so that it can take one more entry, or, when
// the budget refuses and the Map evicts, drops old entries until it can.
func (s *shard) makeRoom() error {
	for {
		err := s.growTable()
		if err == nil || !errors.Is(err, ErrBudget) || !s.m.evict {
			return err
		}
		if !s.evictSome() {
			return err
		}
		if s.tab != nil && uint64(s.count.Load()+1) <= (s.mask+1)/16*13 {
			return nil
		}
	}
}

// growTable doubles the index (or makes the first one) and rehashes it.
func (s *shard) growTable() error {
	n := uint64(initSlots)
	if s.tab != nil {
		n = 2 * (s.mask + 1)
	}
	if n > 1<<tagBits {
		return ErrNoSpace
	}
	mem, err := s.mapMem(int(n * 8))
	if err != nil {
		return err
	}
	tab := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(mem))), n)
	mask := n - 1
	for _, v := range s.tab {
		if v == 0 {
			continue
		}
		i := v >> locBits & mask
		for tab[i] != 0 {
			i = (i + 1) & mask
		}
		tab[i] = v
	}
	if s.tab != nil {
		s.unmapMem(s.tabMem)
	}
	s.tab, s.tabMem, s.mask = tab, mem, mask
	s.epoch++
	return nil
}

// mapMem maps n bytes, charged to the budget.
func (s *shard) mapMem(n int) ([]byte, error) {
	if !s.m.bud.TryCharge(int64(n)) {
		return nil, ErrBudget
	}
	mem, err := s.m.heap.Alloc(n)
	if err != nil {
		s.m.bud.Release(int64(n))
		return nil, errors.Join(ErrNoSpace, err)
	}
	s.grows++
	return mem, nil
}

// unmapMem gives mem, from mapMem, back.
func (s *shard) unmapMem(mem []byte) {
	if err := s.m.heap.Free(mem); err != nil {
		panic("memkit/kv: " + err.Error()) // the OS refused munmap of a valid mapping
	}
	s.m.bud.Release(int64(len(mem)))
	s.releases++
}

// reserve returns room for an entry of span bytes: its segment and offset.
func (s *shard) reserve(span int) (uint32, int, error) {
	if span > s.m.segSize/2 { // a segment of its own
		return s.reserveLarge(span)
	}
	if s.cur != 0 {
		if c := &s.segs[s.cur]; len(c.mem)-c.used >= span {
			return s.cur, s.extend(c, span), nil
		}
	}
	return s.reserveSlow(span)
}

// reserveSlow is reserve when the current segment is full: it takes the
// segment with the most room left (compaction leaves room at segment ends),
// or a new one, or, at the budget, compacts or evicts to make room.
func (s *shard) reserveSlow(span int) (uint32, int, error) {
	for {
		if seg := s.roomiest(span); seg != 0 {
			return s.appendTo(seg, span)
		}
		seg, err := s.newSegment(s.m.segSize, false)
		if err == nil {
			return s.appendTo(seg, span)
		}
		if !errors.Is(err, ErrBudget) {
			return 0, 0, err
		}
		if v := s.mostDead(); v != 0 && s.segs[v].dead >= span {
			s.compact(v)
			continue
		}
		if !s.m.evict || !s.evictSome() {
			return 0, 0, err
		}
	}
}

// appendTo makes seg the current segment and reserves span bytes at its
// end, which has room.
func (s *shard) appendTo(seg uint32, span int) (uint32, int, error) {
	s.makeCurrent(seg)
	return seg, s.extend(&s.segs[seg], span), nil
}

// makeCurrent makes seg the segment Set appends to, and the newest.
func (s *shard) makeCurrent(seg uint32) {
	s.cur = seg
	s.seq++
	s.segs[seg].seq = s.seq
}

// extend reserves span bytes at the end of normal segment c, which has
// room, and returns their offset. Bytes compaction freed and kept are
// reused before untouched ones.
func (s *shard) extend(c *segment, span int) int {
	off := c.used
	c.used += span
	s.used += span
	if off < c.touched {
		s.slack -= min(c.used, c.touched) - off
	}
	c.touched = max(c.touched, c.used)
	return off
}

// reserveLarge gives an entry of span bytes a segment of its own.
func (s *shard) reserveLarge(span int) (uint32, int, error) {
	for {
		seg, err := s.newSegment(span, true)
		if err == nil {
			c := &s.segs[seg]
			s.seq++
			c.seq, c.used = s.seq, span
			return seg, 0, nil
		}
		if !errors.Is(err, ErrBudget) || !s.m.evict || !s.evictSome() {
			return 0, 0, err
		}
	}
}

// roomiest returns the normal segment with the most room at its end, if
// it has room for span bytes, or 0.
func (s *shard) roomiest(span int) uint32 {
	best, room := uint32(0), span-1
	for k := 1; k < len(s.segs); k++ {
		c := &s.segs[k]
		if c.mem != nil && !c.large && len(c.mem)-c.used > room {
			best, room = uint32(k), len(c.mem)-c.used
		}
	}
	return best
}

// mostDead returns the normal segment with the most dead bytes, or 0.
func (s *shard) mostDead() uint32 {
	best, dead := uint32(0), 0
	for k := 1; k < len(s.segs); k++ {
		c := &s.segs[k]
		if c.mem != nil && !c.large && c.dead > dead {
			best, dead = uint32(k), c.dead
		}
	}
	return best
}

// newSegment maps a segment of n bytes and returns its number.
func (s *shard) newSegment(n int, large bool) (uint32, error) {
	var num uint32
	if k := len(s.freeNum); k > 0 {
		num = s.freeNum[k-1]
	} else if len(s.segs) >= maxSegs {
		return 0, ErrNoSpace
	}
	mem, region, err := s.mapSegment(n, large)
	if err != nil {
		return 0, err
	}
	if k := len(s.freeNum); k > 0 {
		s.freeNum = s.freeNum[:k-1]
	} else {
		if len(s.segs) == 0 {
			s.segs = append(s.segs, segment{}) // number 0 names no segment
			s.bases = append(s.bases, nil)
		}
		num = uint32(len(s.segs))
		s.segs = append(s.segs, segment{})
		s.bases = append(s.bases, nil)
	}
	s.segs[num] = segment{mem: mem, large: large, region: region}
	s.bases[num] = unsafe.Pointer(unsafe.SliceData(mem))
	return num, nil
}

// mapSegment maps a segment of n bytes, charged to the budget: a normal
// segment of the default size from the Map's regions, any other a mapping
// of its own. It returns the memory and the region it came from.
func (s *shard) mapSegment(n int, large bool) ([]byte, int, error) {
	if large || n != segSize {
		mem, err := s.mapMem(n)
		return mem, 0, err
	}
	if !s.m.bud.TryCharge(int64(n)) {
		return nil, 0, ErrBudget
	}
	mem, region, err := s.m.regions.segment(s.m.heap)
	if err != nil {
		s.m.bud.Release(int64(n))
		return nil, 0, errors.Join(ErrNoSpace, err)
	}
	s.grows++
	return mem, region, nil
}

// freeSegment gives the memory of segment c back and uncharges it.
func (s *shard) freeSegment(c *segment) error {
	var err error
	if c.large || len(c.mem) != segSize {
		err = s.m.heap.Free(c.mem)
	} else {
		err = s.m.regions.release(s.m.heap, c.mem, c.region)
	}
	s.m.bud.Release(int64(len(c.mem)))
	s.releases++
	return err
}

// dropSegment unmaps segment num, which holds no live entry.
func (s *shard) dropSegment(num uint32) {
	c := &s.segs[num]
	if !c.large {
		s.used -= c.used
		s.dead -= c.dead
		s.slack -= c.touched - c.used
	}
	if err := s.freeSegment(c); err != nil {
		panic("memkit/kv: " + err.Error()) // the OS refused munmap of a valid mapping
	}
	*c = segment{}
	s.bases[num] = nil
	if s.sweep == num {
		s.sweep = 0
	}
	s.freeNum = append(s.freeNum, num)
	if s.cur == num {
		s.cur = 0
	}
}

// kill marks the entry of slot v dead, after its slot was removed or
// replaced, and drops its segment if that leaves it empty.
func (s *shard) kill(v uint64) {
	num := segOf(v)
	c := &s.segs[num]
	mem, off := s.entry(v)
	hdr := header(mem, off)
	setHeader(mem, off, hdr|deadFlag)
	span := hdrSpan(hdr)
	s.live -= span
	s.frees++
	if c.large {
		s.dropSegment(num)
		return
	}
	c.dead += span
	s.dead += span
	if c.dead == c.used && num != s.cur {
		s.dropSegment(num)
	}
}

// delete is Delete under the shard's write lock.
func (s *shard) delete(h uint64, key []byte) bool {
	i, v := s.find(h, key)
	if v == 0 {
		return false
	}
	s.removeAt(i)
	s.count.Add(-1)
	s.kill(v)
	s.maybeCompact()
	return true
}

// maybeCompact does one step of compaction (see compactStep) while a pass
// is under way, or starts one on the segment with the most dead bytes once
// the shard's dead bytes pass compactMin and 1/deadShare of its segments.
// Each step holds the write lock for a bounded time: a whole segment's
// slide in one go, up to 256 KiB, made the other goroutine of memkit
// bench's RunParallel Set block on the lock, and a goroutine woken from a
// block waited ~100 µs more for a CPU (docs/performance.md). It steps on
// while the dead bytes are past twice the threshold, so that the steps
// keep up with any rate of overwrites.
func (s *shard) maybeCompact() {
	for {
		if s.sweep == 0 {
			if !s.overDead(1) {
				return
			}
			if s.sweep = s.mostDead(); s.sweep == 0 {
				return
			}
		}
		s.compactStep(s.sweep, compactStep)
		if !s.overDead(2) {
			return
		}
	}
}

// overDead reports whether the shard's dead bytes pass k times the
// compaction threshold.
func (s *shard) overDead(k int) bool {
	return s.dead > k*compactMin && s.dead*deadShare > k*s.used
}

// compact compacts segment num whole, continuing a pass under way on it.
func (s *shard) compact(num uint32) {
	for !s.compactStep(num, len(s.segs[num].mem)) {
	}
}

// compactStep slides the live entries of segment num down over its dead
// ones, from where the pass left off (segment.swept), moves their slots
// with them, and reports whether the pass reached the segment's end. A
// step stops once it has read limit bytes; it leaves a dead filler entry
// over the room between the last entry it slid and the first it did not
// read, so that the segment reads as entries back to back between steps
// and its dead bytes are as counted. At the end of a pass the pages freed
// at the segment's end go back to the OS (see shrink), and a segment left
// empty is unmapped, unless it is the current one.
func (s *shard) compactStep(num uint32, limit int) bool {
	c := &s.segs[num]
	if c.dead == c.used && num != s.cur {
		s.dropSegment(num)
		return true
	}
	mem := c.mem
	// Live entries between two dead ones move in one copy: a run of n bytes
	// from from waits to move down to w-n until the next dead entry (their
	// slots, found from the headers still in place, already name w-n on).
	w, from, n := c.swept, 0, 0
	r := w
	if r < c.used {
		if hdr := header(mem, r); hdr&deadFlag != 0 {
			r += hdrSpan(hdr) // the last step's filler, which grows each step
		}
	}
	s.warm(mem, r, min(r+limit, c.used))
	for end := r + limit; r < c.used && r < end; {
		hdr := header(mem, r)
		span := hdrSpan(hdr)
		switch {
		case hdr&deadFlag != 0:
			if n > 0 {
				copy(mem[w-n:w], mem[from:from+n])
				n = 0
			}
		case w != r:
			if n == 0 {
				from = r
			}
			i := s.slotAt(num, r)
			s.tab[i] = s.tab[i]&^locMask | loc(num, w)
			n += span
			w += span
		default:
			w += span
		}
		r += span
	}
	copy(mem[w-n:w], mem[from:from+n])
	s.epoch++
	if r < c.used {
		if r > w {
			setFiller(mem, w, r-w)
		}
		c.swept = w
		return false
	}
	if s.sweep == num {
		s.sweep = 0
	}
	// Every dead byte the pass read is now in the room at the end; the
	// rest, if any, died behind it.
	s.shrink(c, w, c.dead-(c.used-w))
	if num != s.cur && !s.m.evict && c.touched-c.used > s.curRoom() {
		s.makeCurrent(num)
	}
	return true
}

// warm loads every cache line of entries [r, end) of a segment, and then
// the index slot where the probe of each live entry among them starts,
// before a compaction step reads them: independent loads, which the CPU
// overlaps, where the step's own loads wait on each other (an entry's
// place is in the header before it, and what follows a slot's probe
// depends on the slot).
func (s *shard) warm(mem []byte, r, end int) {
	var acc uint64
	for p := r; p < end; p += 64 {
		acc += uint64(mem[p])
	}
	if s.mask <= hdrTagMask {
		for p := r; p < end; {
			hdr := header(mem, p)
			if hdr&deadFlag == 0 {
				acc += s.tab[hdr>>hdrTagShift&s.mask]
			}
			p += hdrSpan(hdr)
		}
	}
	s.sink = acc
}

// curRoom returns the bytes at the end of the current segment that were
// written before and are still resident: where an append costs no page
// fault. A compaction that leaves more such room in its segment makes that
// segment the current one (in a Map that does not evict, whose segments'
// order does not matter): otherwise Sets kept appending to the current
// segment's untouched pages while the room compaction kept sat unused, and
// the next compaction gave it back, so that every byte appended cost a page
// fault (0.067 faults and 114 ns of system time per random overwrite of a
// 100k-entry Map).
func (s *shard) curRoom() int {
	if s.cur == 0 {
		return 0
	}
	c := &s.segs[s.cur]
	return c.touched - c.used
}

// shrink records that normal segment c's entries now end at w (compaction
// or eviction slid them down) and left dead bytes of its entries before w
// (entries deleted behind a compaction's pass). The bytes
// freed at its end stay resident while the shard's slack (touched bytes
// past the entries, which Set appends into first) is within maxSlack; past
// it, the segment's free pages go back to the OS (madvise), so that
// overwrites in steady state reuse memory without a system call or a page
// fault, and deletes still give memory back.
func (s *shard) shrink(c *segment, w, left int) {
	s.used -= c.used - w
	s.dead -= c.dead - left
	s.slack += c.used - w
	c.used, c.dead, c.swept = w, left, 0
	if s.slack <= s.maxSlack() {
		return
	}
	start := (w + pageSize - 1) &^ (pageSize - 1)
	if end := (c.touched + pageSize - 1) &^ (pageSize - 1); end > start {
		_ = offheap.Release(c.mem[start:end]) // best effort: the pages stay mapped either way
		s.releases++
	}
	s.slack -= c.touched - w
	c.touched = w
}

// maxSlack is the slack a shard keeps resident: as many bytes as its live
// entries take, up to a quarter segment, and 1/128 of its entries' bytes;
// so an emptied shard keeps none. (A compaction frees a few tens of KiB,
// which the next Sets fill; 1/32 and a whole segment cost a large Map 4%
// more RSS after a minute of overwrites.)
func (s *shard) maxSlack() int { return min(s.m.segSize/4, s.live) + s.used/128 }

// evictSome makes room when the budget refuses the shard memory: it evicts
// from the shard's own oldest segment or, when the shard holds nothing to
// evict (the other shards took the budget), from another shard's. It takes
// the other shard with TryLock, so that two shards evicting for each other
// never wait on each other. It reports whether it evicted anything.
func (s *shard) evictSome() bool {
	if s.evictOldest() {
		return true
	}
	for i := range s.m.shards {
		o := &s.m.shards[i]
		if o == s || !o.mu.TryLock() {
			continue
		}
		ok := !o.closed && o.evictOldest()
		o.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// evictOldest makes room in the segment filled longest ago: an entry read
// since it was stored (or last spared) gets a second chance, sliding down
// to the segment's start with its mark cleared; every other entry is
// dropped. The segment becomes the newest, or is unmapped if it kept
// nothing. It reports whether there was a segment to work on.
func (s *shard) evictOldest() bool {
	num, seq := uint32(0), ^uint64(0)
	for k := 1; k < len(s.segs); k++ {
		if c := &s.segs[k]; c.mem != nil && c.seq < seq && c.used > c.dead {
			num, seq = uint32(k), c.seq
		}
	}
	if num == 0 {
		return false
	}
	c := &s.segs[num]
	mem := c.mem
	w := 0
	for r := 0; r < c.used; {
		hdr := header(mem, r)
		span := hdrSpan(hdr)
		switch {
		case hdr&deadFlag != 0:
		case hdr&readFlag != 0: // spared
			i := s.slotAt(num, r)
			setHeader(mem, r, hdr&^readFlag)
			if w != r {
				copy(mem[w:w+span], mem[r:r+span])
				s.tab[i] = s.tab[i]&^locMask | loc(num, w)
			}
			w += span
		default:
			s.removeAt(s.slotAt(num, r))
			s.count.Add(-1)
			s.live -= span
			s.frees++
			s.evictions++
		}
		r += span
	}
	s.epoch++
	if w == 0 && (c.large || num != s.cur) {
		s.dropSegment(num)
		return true
	}
	s.seq++
	c.seq = s.seq
	if c.large {
		return true
	}
	s.shrink(c, w, 0)
	return true
}

// rangeShard is Range over the shard; it reports whether fn asked for more.
func (s *shard) rangeShard(fn func(key, value []byte) bool) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		panic(msgClosed)
	}
	for _, v := range s.tab {
		if v == 0 {
			continue
		}
		mem, off := s.entry(v)
		key := keyOf(mem, off, header(mem, off))
		if !s.m.rangeCall(fn, key, s.value(v)) {
			return false
		}
	}
	return true
}

// addStats adds the shard's figures to st.
func (s *shard) addStats(st *stats.Stats) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st.InUseBytes += uint64(s.live)
	st.FreeBytes += uint64(s.dead)
	st.LiveObjects += uint64(s.count.Load())
	st.ReservedBytes += uint64(len(s.tabMem))
	for k := range s.segs {
		c := &s.segs[k]
		switch {
		case c.mem == nil:
		case c.large:
			st.ReservedBytes += uint64(len(c.mem))
		default:
			st.ReservedBytes += uint64((c.touched + pageSize - 1) &^ (pageSize - 1))
		}
	}
	st.Allocs += s.stores
	st.Frees += s.frees
	st.Failures += s.failures
	st.Grows += s.grows
	st.Releases += s.releases
}

// close unmaps the shard's memory and marks it closed.
func (s *shard) close() (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for k := range s.segs {
		if c := &s.segs[k]; c.mem != nil {
			if e := s.freeSegment(c); e != nil && err == nil {
				err = e
			}
		}
	}
	if s.tabMem != nil {
		if e := s.m.heap.Free(s.tabMem); e != nil && err == nil {
			err = e
		}
		s.m.bud.Release(int64(len(s.tabMem)))
		s.releases++
	}
	s.segs, s.bases, s.freeNum, s.tab, s.tabMem, s.cur, s.sweep = nil, nil, nil, nil, nil, 0, 0
	s.live, s.dead, s.used, s.slack = 0, 0, 0, 0
	s.count.Store(0)
	return err
}
