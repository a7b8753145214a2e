package offheap_test

import (
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/offheap"
)

// FuzzOffheap decodes the input into Alloc (plain or from a guarded
// Allocator), Free, double Free, Release and verify operations against a
// model: no two live mappings overlap, every byte written reads back until
// Free (or, for released pages, reads back or reads as zero), a Free of a
// slice freed before whose memory no live mapping holds panics as a bad
// free, and the stats move as the model says.
func FuzzOffheap(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 2, 0, 3, 0, 1, 0, 1, 255, 3, 2, 1})
	f.Add([]byte{0, 255, 255, 0, 0, 16, 2, 0, 2, 0, 1, 0})
	f.Add([]byte{4, 10, 0, 4, 0, 16, 1, 0, 5, 0, 3, 4, 1, 1, 1, 5, 0, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxLive = 16
		ops := memtest.NewOps(data)
		m := memtest.NewModel(0)
		g, err := offheap.New(offheap.WithGuardPages(), offheap.WithQuarantine(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		owner := map[uintptr]*offheap.Allocator{}
		var freed [][]byte
		var s0, s memkit.Stats
		offheap.ReadStats(&s0)
		var allocs, frees, bad uint64
		defer func() {
			for _, blk := range m.Live {
				_ = owner[addr(blk.Buf)].Free(blk.Buf)
			}
			_ = g.Purge()
		}()
		for ops.More() {
			switch op := ops.Byte() % 8; {
			case (op == 0 || op == 4) && len(m.Live) < maxLive:
				n := ops.Uint16() % 20000
				a := offheap.Default()
				if op == 4 {
					a = g
				}
				b, err := a.Alloc(n)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) != n || op == 4 && offheap.GuardPagesAvailable && cap(b) != n {
					t.Fatalf("Alloc(%d): len %d cap %d", n, len(b), cap(b))
				}
				if _, err := m.Add(b); err != nil {
					t.Fatal(err)
				}
				owner[addr(b)] = a
				allocs++
			case op == 1 && len(m.Live) > 0:
				b, err := m.Remove(int(ops.Byte()) % len(m.Live))
				if err != nil {
					t.Fatal(err)
				}
				if err := owner[addr(b)].Free(b); err != nil {
					t.Fatal(err)
				}
				delete(owner, addr(b))
				frees++
				freed = append(freed, b)
				if len(freed) > 8 {
					freed = freed[1:]
				}
			case op == 2 && len(m.Live) > 0:
				// Release a live block, then refill it: its pattern is
				// gone (zero on Linux), the mapping must still work.
				i := int(ops.Byte()) % len(m.Live)
				blk := m.Live[i]
				if err := offheap.Release(blk.Buf); err != nil {
					t.Fatal(err)
				}
				memtest.Fill(blk.Buf, blk.Seed)
			case op == 3:
				if err := m.VerifyAll(); err != nil {
					t.Fatal(err)
				}
				if err := memtest.CheckDisjoint(m); err != nil {
					t.Fatal(err)
				}
			case op == 5 && len(freed) > 0:
				// A double free, unless the address was mapped again: the
				// kernel reuses addresses, and a stale slice that starts a
				// live mapping is indistinguishable from it.
				b := freed[int(ops.Byte())%len(freed)]
				if startsLive(b) {
					continue
				}
				wantBadFree(t, func() { _ = offheap.Free(b) })
				bad++
			case op == 6 && len(m.Live) > 0:
				// A Free of a live mapping's slice re-sliced past its start,
				// or of memory no allocator mapped: refused, nothing freed.
				blk := m.Live[int(ops.Byte())%len(m.Live)].Buf
				wrong := make([]byte, 1+ops.Byte()%64)
				if ops.Byte()%2 == 0 && cap(blk) > 1 {
					wrong = blk[:cap(blk)][1:]
				}
				wantBadFree(t, func() { _ = owner[addr(blk)].Free(wrong) })
				bad++
			}
		}
		offheap.ReadStats(&s)
		if s.Allocs-s0.Allocs != allocs || s.Frees-s0.Frees != frees ||
			s.LiveObjects-s0.LiveObjects != uint64(len(m.Live)) || s.BadFrees-s0.BadFrees != bad {
			t.Fatalf("stats %v, before %v; model allocs %d frees %d live %d bad %d", &s, &s0, allocs, frees, len(m.Live), bad)
		}
		if err := m.VerifyAll(); err != nil {
			t.Fatal(err)
		}
	})
}

// startsLive reports whether a live mapping of the process holds b's first
// byte (its own mapping, or one mapped at the same place since).
func startsLive(b []byte) bool { return offheap.LiveAt(addr(b)) }

// wantBadFree fails t unless free panics with memkit's message: the release
// build's one text, or the checked build's report from offheap.
func wantBadFree(t *testing.T, free func()) {
	t.Helper()
	if checked.Enabled {
		if mu, _ := memtest.MisuseOf(free); mu == nil || mu.Allocator != "offheap" {
			t.Fatalf("bad Free: misuse %v", mu)
		}
	} else if got := memtest.PanicOf(free); got != badFree {
		t.Fatalf("bad Free: panic %q", got)
	}
}
