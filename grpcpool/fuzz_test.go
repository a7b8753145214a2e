package grpcpool_test

import (
	"testing"

	"github.com/memkit/memkit/grpcpool"
	"github.com/memkit/memkit/internal/memtest"
)

// FuzzPool decodes the input into Gets, Puts (of a whole buffer or of a
// prefix, as gRPC puts back), and the table's mistake a gRPC codec or
// plug-in can make, a second Put of a *[]byte still idle, and checks
// against a model that no two live buffers overlap, that every byte
// written reads back until its Put, that the second Put panics with the
// table's message, and that no header is handed to two owners.
func FuzzPool(f *testing.F) {
	// maxLiveBytes bounds what one input holds, so that an input of large
	// Gets stays well within the fuzzer's time per input in the checked
	// build, which poisons and checks every byte.
	const maxLiveBytes = 8 << 20
	f.Add([]byte{0, 1, 0, 2, 1, 0, 2, 0, 0, 3})
	f.Add([]byte{0, 200, 0, 0, 255, 255, 3, 1, 0, 3, 2, 0, 0, 9, 1, 1})
	f.Add([]byte{0, 16, 0, 0, 16, 0, 2, 1, 2, 0, 0, 16, 0, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := grpcpool.New()
		if err != nil {
			t.Fatal(err)
		}
		ops := memtest.NewOps(data)
		m := memtest.NewModel(0)
		var hs []*[]byte // hs[i] holds m.Live[i]'s buffer
		live := 0        // bytes asked for by the live Gets
		owners := map[*[]byte]bool{}
		put := func(i int, prefix bool) *[]byte {
			b, err := m.Remove(i)
			if err != nil {
				t.Fatal(err)
			}
			h := hs[i]
			hs[i] = hs[len(hs)-1]
			hs = hs[:len(hs)-1]
			live -= len(b)
			if prefix {
				*h = b[:len(b)/2]
			}
			delete(owners, h)
			p.Put(h)
			return h
		}
		for ops.More() {
			switch op := ops.Byte(); op % 4 {
			case 0, 1: // Get
				if len(hs) >= 48 {
					continue
				}
				n := ops.Uint16()
				if op&8 != 0 {
					n *= 64 // up to 4 MiB, beyond the classes
				}
				if live+n > maxLiveBytes {
					continue
				}
				live += n
				h := p.Get(n)
				if len(*h) != n {
					t.Fatalf("Get(%d): len %d", n, len(*h))
				}
				if owners[h] {
					t.Fatalf("Get(%d) returned a header a live buffer holds", n)
				}
				owners[h] = true
				if _, err := m.Add(*h); err != nil {
					t.Fatal(err)
				}
				hs = append(hs, h)
			case 2: // Put
				if len(hs) > 0 {
					put(int(ops.Byte())%len(hs), op&4 != 0)
				}
			case 3: // Put, then the mistake: Put of the same header again
				if len(hs) > 0 {
					h := put(int(ops.Byte())%len(hs), op&4 != 0)
					memtest.CheckPanic(t, panicDoublePut, func() { p.Put(h) })
				}
			}
			if err := m.VerifyAll(); err != nil {
				t.Fatal(err)
			}
		}
		for len(hs) > 0 {
			put(0, false)
		}
	})
}
