package ringbuf

import (
	"fmt"
	"sync"

	"github.com/memkit/memkit/internal/checked"
)

// The checked build (-tags memkitdebug). Every method here is called only
// under "if checked.Enabled", so the release build compiles the calls away.
//
// A slot is free (for the writer of its next position), holds a record, or
// is lent (by Reserve until Commit, by Peek until Release). A free slot is
// filled with poison, checked when a writer claims it; a record is
// followed by guard bytes to the end of its slot, and its checksum is kept,
// both checked when a reader takes it. So a write through a lent slot's
// bytes after it was handed back is found by the next user of the slot.

// keepLends is how many handed-back lends a ring remembers, to name the
// first Commit or Release of a second one.
const keepLends = 4096

// lendRecord is one lend of a slot.
type lendRecord struct {
	op   string // "Reserve" or "Peek"
	pos  uint64
	addr uintptr
	rec  *checked.Record // the tracker's: size, and the stacks of the lend and of its hand-back
	done bool            // handed back
}

// lendKey names a lend: each position is lent once by Reserve, to its
// writer, and once by Peek, to its reader.
type lendKey struct {
	pos  uint64
	peek bool
}

// ringChecked is a Ring's checked-build state.
type ringChecked struct {
	r   *Ring
	trk *checked.Tracker // lent slots, for memkit.Leaks

	mu    sync.Mutex
	lends map[lendKey]*lendRecord // lent, and the last keepLends handed back
	order [keepLends]lendKey      // handed back, oldest first from ohead, in a ring
	ohead int
	olen  int
	last  []*lendRecord // by slot: its last lend
	sums  []uint64      // by slot: checksum of the record it holds
}

func newRingChecked(r *Ring) *ringChecked {
	c := &ringChecked{
		r:     r,
		trk:   checked.NewTracker("ringbuf"),
		lends: make(map[lendKey]*lendRecord),
		last:  make([]*lendRecord, len(r.slots)),
		sums:  make([]uint64, len(r.slots)),
	}
	checked.Register(r, c.trk)
	checked.Fill(r.mem, checked.PoisonByte)
	return c
}

// checksum is FNV-1a of b.
func checksum(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// misuse returns a report of op on the slot of pos, with the stacks of
// the lend l, if any.
func (c *ringChecked) misuse(op, kind string, pos uint64, l *lendRecord, detail string) *checked.Misuse {
	var rec *checked.Record
	if l != nil && l.rec != nil {
		r := *l.rec
		if !l.done {
			r.Free = checked.Stack{}
		}
		rec = &r
	}
	return c.trk.Report(op, kind, uintptr(c.r.slotPtr(pos)), rec, detail)
}

// lastLend returns the last lend of the slot of pos.
func (c *ringChecked) lastLend(pos uint64) *lendRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last[pos&c.r.mask]
}

// claimed checks the slot a writer claimed for pos by op: it must still
// hold the poison its last reader left. When it does not, the ring gets
// an empty record at pos, so that readers do not wait for it forever, and
// the write is reported.
func (c *ringChecked) claimed(pos uint64, op string) {
	mem := c.r.slotMem(pos)
	if k := checked.IndexNot(mem, checked.PoisonByte); k >= 0 {
		l := c.lastLend(pos)
		detail := fmt.Sprintf("byte %d of the %d-byte slot changed after its record was read", k, len(mem))
		if l != nil {
			detail = fmt.Sprintf("byte %d of the %d-byte slot changed after %s of position %d handed it back", k, len(mem), l.op, l.pos)
		}
		c.committed(pos, 0)
		c.r.publish(pos, 0)
		panic(c.misuse(op, checked.UseAfterFree, pos, l, detail))
	}
}

// committed fills the rest of the slot of pos after its record of n bytes
// with guard bytes, and keeps the record's checksum.
func (c *ringChecked) committed(pos uint64, n int) {
	mem := c.r.slotMem(pos)
	checked.Fill(mem[n:], checked.GuardByte)
	c.sums[pos&c.r.mask] = checksum(mem[:n])
}

// taken checks the record of pos that a reader (or a Write dropping it)
// took by op: it and the guard bytes after it must be as committed.
func (c *ringChecked) taken(pos uint64, op string) {
	mem := c.r.slotMem(pos)
	n := int(c.r.slots[pos&c.r.mask].n)
	var detail string
	if k := checked.IndexNot(mem[n:], checked.GuardByte); k >= 0 {
		detail = fmt.Sprintf("byte %d past the %d-byte record changed after it was committed", k, n)
	} else if checksum(mem[:n]) != c.sums[pos&c.r.mask] {
		detail = fmt.Sprintf("the %d-byte record changed after it was committed", n)
	} else {
		return
	}
	// The record is consumed: its slot goes to the next lap's writer.
	m := c.misuse(op, checked.UseAfterFree, pos, c.lastLend(pos), detail)
	c.freed(pos)
	c.r.free(pos)
	panic(m)
}

// freed fills the slot of pos, about to be handed to the writer of its
// next lap, with poison.
func (c *ringChecked) freed(pos uint64) {
	checked.Fill(c.r.slotMem(pos), checked.PoisonByte)
}

// lend records the lend of the slot of pos by op, with its caller's stack.
func (c *ringChecked) lend(pos uint64, op string, size int) {
	addr := uintptr(c.r.slotPtr(pos))
	c.trk.Alloc(addr, size, checked.SkipWithin(pkgPath))
	l := &lendRecord{op: op, pos: pos, addr: addr, rec: c.trk.Lookup(addr)}
	c.mu.Lock()
	c.lends[lendKey{pos, op == "Peek"}] = l
	c.mu.Unlock()
}

// giveBack records the return of the lend of pos by op (Commit or
// Release), which the release build's checks found valid.
func (c *ringChecked) giveBack(pos uint64, op string) {
	key := lendKey{pos, op == "Release"}
	c.mu.Lock()
	l := c.lends[key]
	c.mu.Unlock()
	if l == nil || l.done {
		return // not lent by this build's bookkeeping: leave it to the release checks
	}
	c.trk.Free(op, l.addr, checked.SkipWithin(pkgPath)) // records the stack in l.rec
	c.mu.Lock()
	l.done = true
	c.last[pos&c.r.mask] = l
	if c.olen == keepLends {
		delete(c.lends, c.order[c.ohead])
		c.ohead = (c.ohead + 1) % keepLends
		c.olen--
	}
	c.order[(c.ohead+c.olen)%keepLends] = key
	c.olen++
	c.mu.Unlock()
}

// badReturn panics with a report of op (Commit or Release) of s, which the
// release build's checks refused: a slot of no lend of this ring, one
// handed back before, or one lent by the other operation.
func (c *ringChecked) badReturn(op string, s Slot) {
	if s.p == nil || s.p != c.r.slotPtr(s.pos) {
		want := map[string]string{"Commit": "Reserve", "Release": "Peek"}[op]
		panic(c.trk.Report(op, checked.ForeignFree, uintptr(s.p), nil,
			"a Slot lent by no "+want+" of this ring"))
	}
	c.mu.Lock()
	l := c.lends[lendKey{s.pos, s.peek}]
	c.mu.Unlock()
	lentBy := "Reserve"
	if s.peek {
		lentBy = "Peek"
	}
	switch {
	case (lentBy == "Peek") != (op == "Release"):
		panic(c.misuse(op, checked.StaleHandle, s.pos, l,
			fmt.Sprintf("a Slot lent by %s of position %d handed to %s", lentBy, s.pos, op)))
	case l != nil && l.done:
		panic(c.misuse(op, checked.DoubleFree, s.pos, l, fmt.Sprintf("a Slot of position %d handed back twice", s.pos)))
	default:
		panic(c.misuse(op, checked.StaleHandle, s.pos, l,
			fmt.Sprintf("a Slot of position %d, handed back long ago", s.pos)))
	}
}

// pkgPath is this package's import path.
const pkgPath = "github.com/memkit/memkit/ringbuf"
