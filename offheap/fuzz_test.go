package offheap_test

import (
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/offheap"
)

// FuzzOffheap decodes the input into Alloc, Free, Release and verify
// operations against a model: no two live mappings overlap, every byte
// written reads back until Free (or, for released pages, reads back or
// reads as zero), and the stats move as the model says.
func FuzzOffheap(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 2, 0, 3, 0, 1, 0, 1, 255, 3, 2, 1})
	f.Add([]byte{0, 255, 255, 0, 0, 16, 2, 0, 2, 0, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxLive = 16
		ops := memtest.NewOps(data)
		m := memtest.NewModel(0)
		var s0, s memkit.Stats
		offheap.ReadStats(&s0)
		var allocs, frees uint64
		defer func() {
			for _, blk := range m.Live {
				_ = offheap.Free(blk.Buf)
			}
		}()
		for ops.More() {
			switch op := ops.Byte() % 4; {
			case op == 0 && len(m.Live) < maxLive:
				n := ops.Uint16() % 20000
				b, err := offheap.Alloc(n)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) != n {
					t.Fatalf("Alloc(%d): len %d", n, len(b))
				}
				if _, err := m.Add(b); err != nil {
					t.Fatal(err)
				}
				allocs++
			case op == 1 && len(m.Live) > 0:
				b, err := m.Remove(int(ops.Byte()) % len(m.Live))
				if err != nil {
					t.Fatal(err)
				}
				if err := offheap.Free(b); err != nil {
					t.Fatal(err)
				}
				frees++
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
			}
		}
		offheap.ReadStats(&s)
		if s.Allocs-s0.Allocs != allocs || s.Frees-s0.Frees != frees ||
			s.LiveObjects-s0.LiveObjects != uint64(len(m.Live)) {
			t.Fatalf("stats %v, before %v; model allocs %d frees %d live %d", &s, &s0, allocs, frees, len(m.Live))
		}
		if err := m.VerifyAll(); err != nil {
			t.Fatal(err)
		}
	})
}
