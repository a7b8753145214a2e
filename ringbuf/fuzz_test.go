package ringbuf_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/ringbuf"
)

// record is the model of one record in the ring.
type record struct {
	seed uint64
	n    int
}

// FuzzRing decodes the input into Write, Read, Reserve/Commit and
// Peek/Release operations on a ring of a fuzzed shape, policy and start
// position (some just before the counters wrap), and checks them against
// a FIFO queue: records come out whole and in order, a full ring rejects,
// drops the oldest or (non-blocking here) reports full as its policy says,
// lent slots never overlap, and the stats agree with the model. Between
// the correct operations it makes the mistakes of the misuse table that
// leave the ring's state as it was when caught — a slot handed back twice,
// to the wrong ring or to the other operation (a Reserve slot released
// while its record is peeked, issue 13 case 3), a nil Context, a Commit
// length outside the slot, a short Read buffer — and checks that each
// panics with its memkit message (or, in the checked build, its report)
// and that every record in the ring and the one held through Peek still
// read back exactly.
func FuzzRing(f *testing.F) {
	f.Add([]byte{0, 3, 0, 10, 0, 10, 1, 1, 1})
	f.Add([]byte{0x19, 1, 0, 5, 0, 6, 0, 7, 0, 8, 1, 1, 2, 3, 4, 5, 1, 1, 1})
	f.Add([]byte{0x82, 7, 2, 20, 3, 4, 0, 200, 5, 1, 2, 9, 3, 1, 1, 4, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		cfg := ops.Byte()
		slots := 1 + int(ops.Byte()%12)
		size := 1 + int(cfg&7)*9
		pol := []ringbuf.Policy{ringbuf.Reject, ringbuf.Overwrite, ringbuf.Reject, ringbuf.Overwrite}[cfg>>3&3]
		start := uint64(0)
		if cfg&0x80 != 0 {
			start = ^uint64(0) - uint64(cfg>>5&3)*uint64(slots)
		}
		r, err := ringbuf.New(slots, size, ringbuf.WithPolicy(pol), ringbuf.WithStart(start))
		if err != nil {
			t.Fatal(err)
		}
		if err := runRing(r, ops, slots, size, pol, start); err != nil {
			t.Fatal(err)
		}
	})
}

func runRing(r *ringbuf.Ring, ops *memtest.Ops, slots, size int, pol ringbuf.Policy, start uint64) error {
	var (
		head, tail        = start, start // positions of the next read and write
		alloc             = uint64(r.SlotsAllocated())
		held              *ringbuf.Slot // a peeked slot not yet released
		heldPos           uint64
		heldRec           record
		queue             []record
		seed              uint64
		writes, failures  uint64
		dropped, consumed uint64
		lent              = memtest.NewModel(0)
		p                 = make([]byte, size)
		committed         ringbuf.Slot // the last slot committed
		released          ringbuf.Slot // the last slot released
		other, _          = ringbuf.New(slots, size)
	)
	write := func(n int, viaSlot bool) error {
		if n > size {
			if viaSlot {
				return nil
			}
			if err := r.Write(make([]byte, n)); err != ringbuf.ErrTooLarge {
				return fmt.Errorf("Write(%d bytes) into %d-byte slots = %v", n, size, err)
			}
			return nil
		}
		seed++
		full := len(queue) == slots
		busy := held != nil && tail == heldPos+alloc // the next slot is the one lent
		if busy && pol != ringbuf.Reject {
			return nil // would wait for the release, which this goroutine makes
		}
		var err error
		if viaSlot {
			var s ringbuf.Slot
			s, err = r.Reserve(context.Background())
			if err == nil {
				if len(s.Bytes()) != size {
					return fmt.Errorf("reserved %d bytes; want %d", len(s.Bytes()), size)
				}
				if _, err := lent.Add(s.Bytes()); err != nil {
					return err
				}
				if _, err := lent.Remove(0); err != nil {
					return err
				}
				memtest.Fill(s.Bytes()[:n], seed)
				r.Commit(s, n)
				committed = s
			}
		} else {
			b := make([]byte, n)
			memtest.Fill(b, seed)
			err = r.Write(b)
		}
		switch {
		case (full || busy) && pol == ringbuf.Reject:
			if err != ringbuf.ErrFull {
				return fmt.Errorf("write to a full ring (busy %v) = %v; want ErrFull", busy, err)
			}
			failures++
			return nil
		case err != nil:
			return fmt.Errorf("write = %v", err)
		case full: // Overwrite
			queue = queue[1:]
			dropped++
			consumed++
			head++
		}
		queue = append(queue, record{seed, n})
		writes++
		tail++
		return nil
	}
	read := func(viaSlot bool) error {
		var got []byte
		var ok bool
		var s ringbuf.Slot
		if viaSlot {
			s, ok = r.Peek()
			got = s.Bytes()
		} else {
			var n int
			n, ok = r.Read(p)
			got = p[:n]
		}
		if ok != (len(queue) > 0) {
			return fmt.Errorf("read ok %v with %d records", ok, len(queue))
		}
		if !ok {
			return nil
		}
		want := queue[0]
		queue = queue[1:]
		consumed++
		head++
		if len(got) != want.n {
			return fmt.Errorf("read %d bytes; want %d", len(got), want.n)
		}
		if err := memtest.Verify(got, want.seed); err != nil {
			return err
		}
		if viaSlot {
			r.Release(s)
			released = s
		}
		return nil
	}
	release := func() error {
		if held == nil {
			return nil
		}
		if err := memtest.Verify(held.Bytes(), heldRec.seed); err != nil {
			return fmt.Errorf("a lent record changed: %w", err)
		}
		r.Release(*held)
		released = *held
		held = nil
		return nil
	}
	// misuse makes mistakes that must panic and change nothing.
	misuse := func() error {
		if committed.Bytes() != nil {
			if err := lendPanic("Commit", checked.DoubleFree, func() { r.Commit(committed, 0) }); err != nil {
				return err
			}
			// A Reserve slot handed to Release, maybe while its record is
			// the one held through Peek.
			if err := lendPanic("Release", checked.StaleHandle, func() { r.Release(committed) }); err != nil {
				return err
			}
			if err := wantPanic(msgCommitRange, func() { r.Commit(committed, size+1) }); err != nil {
				return err
			}
		}
		if released.Bytes() != nil {
			if err := lendPanic("Release", checked.DoubleFree, func() { r.Release(released) }); err != nil {
				return err
			}
			if err := lendPanic("Commit", checked.StaleHandle, func() { r.Commit(released, 0) }); err != nil {
				return err
			}
		}
		if held != nil {
			if err := lendPanic("Commit", checked.StaleHandle, func() { r.Commit(*held, 0) }); err != nil {
				return err
			}
		}
		//lint:ignore SA1012 the mistake under test
		if err := wantPanic(msgNilContext, func() { r.Reserve(nil) }); err != nil {
			return err
		}
		if size > 1 {
			if err := wantPanic(msgShortRead, func() { r.Read(p[:size-1]) }); err != nil {
				return err
			}
		}
		if s, err := other.Reserve(context.Background()); err == nil {
			if err := lendPanic("Commit", checked.ForeignFree, func() { r.Commit(s, 0) }); err != nil {
				return err
			}
			other.Commit(s, 0)
			g, _ := other.Peek()
			if err := lendPanic("Release", checked.ForeignFree, func() { r.Release(g) }); err != nil {
				return err
			}
			other.Release(g)
		}
		return nil
	}
	for ops.More() {
		var err error
		switch op := ops.Byte(); op % 8 {
		case 6: // Peek and hold the slot while other operations run
			if held != nil {
				continue
			}
			s, ok := r.Peek()
			if ok != (len(queue) > 0) {
				return fmt.Errorf("Peek ok %v with %d records", ok, len(queue))
			}
			if !ok {
				continue
			}
			held, heldPos, heldRec = &s, head, queue[0]
			queue = queue[1:]
			consumed++
			head++
			if len(s.Bytes()) != heldRec.n {
				return fmt.Errorf("peeked %d bytes; want %d", len(s.Bytes()), heldRec.n)
			}
		case 7:
			err = release()
		case 0, 1:
			err = write(int(ops.Byte())%(size+size/4+1), false)
		case 2:
			err = write(int(ops.Byte())%(size+1), true)
		case 3:
			err = read(false)
		case 4:
			err = read(true)
		case 5:
			if op&0x10 != 0 {
				if err := misuse(); err != nil {
					return err
				}
				// The record held through Peek still reads back exactly;
				// the queue's are verified as they are read.
				if held != nil {
					if err := memtest.Verify(held.Bytes(), heldRec.seed); err != nil {
						return fmt.Errorf("after a mistake the peeked record changed: %w", err)
					}
				}
			}
			var s memkit.Stats
			r.ReadStats(&s)
			if s.Allocs != writes || s.Frees != consumed || s.LiveObjects != uint64(len(queue)) ||
				s.Failures != failures || r.Dropped() != dropped || r.Len() != len(queue) {
				return fmt.Errorf("stats %v dropped %d len %d\nmodel: writes %d consumed %d live %d failures %d dropped %d",
					&s, r.Dropped(), r.Len(), writes, consumed, len(queue), failures, dropped)
			}
		}
		if err != nil {
			return err
		}
	}
	if err := release(); err != nil {
		return err
	}
	for len(queue) > 0 {
		if err := read(false); err != nil {
			return err
		}
	}
	return read(false)
}

// wantPanic checks that f panics with exactly msg, in both builds.
func wantPanic(msg string, f func()) error {
	if _, other := memtest.MisuseOf(f); other != msg {
		return fmt.Errorf("panic %v; want %q", other, msg)
	}
	return nil
}

// lendPanic checks that f, a Commit or Release (op) of a slot not lent,
// panics as the build in use reports it: with the release build's message,
// or with a *checked.Misuse of kind in the checked build.
func lendPanic(op, kind string, f func()) error {
	m, other := memtest.MisuseOf(f)
	want := map[string]string{
		"Commit":  "memkit/ringbuf: Commit of a slot not reserved",
		"Release": "memkit/ringbuf: Release of a slot not peeked",
	}[op]
	switch {
	case checked.Enabled && (m == nil || m.Op != op || m.Kind != kind):
		return fmt.Errorf("%s of a slot not lent: panic %v %v; want %s", op, m, other, kind)
	case !checked.Enabled && other != want:
		return fmt.Errorf("%s of a slot not lent: panic %v; want %q", op, other, want)
	}
	return nil
}
