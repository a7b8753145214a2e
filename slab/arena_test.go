package slab_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/slab"
)

func mustArena(t testing.TB, start, slabSize int, growth float64, opts ...slab.Option) *slab.Arena {
	t.Helper()
	a, err := slab.NewArena(start, slabSize, growth, nil, opts...)
	if err != nil {
		t.Fatalf("NewArena: %v", err)
	}
	return a
}

func readStats(a *slab.Arena) memkit.Stats {
	var s memkit.Stats
	a.ReadStats(&s)
	return s
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func TestNewArena_InvalidParamsNameTheParam(t *testing.T) {
	for _, tc := range []struct {
		start, slabSize int
		growth          float64
		opts            []slab.Option
		want            string
	}{
		{0, 1024, 2, nil, "memkit/slab: startChunkSize 0 must be positive"},
		{-8, 1024, 2, nil, "memkit/slab: startChunkSize -8 must be positive"},
		{8, 0, 2, nil, "memkit/slab: slabSize 0 must be between 1 and 1073741824"},
		{8, 1<<30 + 1, 2, nil, "memkit/slab: slabSize 1073741825 must be between 1 and 1073741824"},
		{2048, 1024, 2, nil, "memkit/slab: startChunkSize 2048 > slabSize 1024"},
		{8, 1024, 1, nil, "memkit/slab: growthFactor 1 must be greater than 1"},
		{8, 1024, 0.5, nil, "memkit/slab: growthFactor 0.5 must be greater than 1"},
		{8, 1 << 30, 1.0000001, nil, "memkit/slab: growthFactor 1.0000001 makes more than 1024 classes from 8 to 1073741824 bytes"},
		{8, 1024, 2, []slab.Option{slab.WithIdleSlabs(-1)}, "memkit/slab: IdleSlabs -1 must be >= 0"},
	} {
		a, err := slab.NewArena(tc.start, tc.slabSize, tc.growth, nil, tc.opts...)
		if a != nil || err == nil || err.Error() != tc.want {
			t.Errorf("NewArena(%d, %d, %v) = %v, %v; want nil, %q", tc.start, tc.slabSize, tc.growth, a, err, tc.want)
		}
	}
}

func TestArena_ClassSizes(t *testing.T) {
	for _, tc := range []struct {
		start, slabSize int
		growth          float64
		want            []int // ClassSize of 1, then of each class+1
	}{
		{8, 1024, 2, []int{8, 16, 32, 64, 128, 256, 512, 1024}},
		{10, 1000, 2, []int{16, 32, 64, 128, 256, 512, 1000}},
		{64, 1000, 1.5, []int{64, 96, 144, 216, 328, 496, 744, 1000}},
		{100, 100, 2, []int{100}},
	} {
		var got []int
		for n := 1; n <= tc.slabSize; {
			c := mustArena(t, tc.start, tc.slabSize, tc.growth).ClassSize(n)
			got = append(got, c)
			n = c + 1
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("NewArena(%d, %d, %v) classes %v; want %v", tc.start, tc.slabSize, tc.growth, got, tc.want)
		}
	}
	// Sizes that are no multiple of 8, up to the last byte of the slab.
	for _, slabSize := range []int{100, 1001, 65535, 65537} {
		a := mustArena(t, 8, slabSize, 1.5)
		for n := range slabSize + 1 {
			if c := a.ClassSize(n); c < n || (n > 0 && c > slabSize) {
				t.Fatalf("slab %d: ClassSize(%d) = %d", slabSize, n, c)
			}
		}
		b := a.Alloc(slabSize)
		if len(b) != slabSize || !a.DecRef(b) {
			t.Fatalf("slab %d: Alloc of the whole slab failed", slabSize)
		}
	}
	a := mustArena(t, 8, 1<<20, 2)
	for n := range 70000 {
		c := a.ClassSize(n)
		if c < n || c < 8 || c&(c-1) != 0 {
			t.Fatalf("ClassSize(%d) = %d", n, c)
		}
	}
	if c := a.ClassSize(1<<20 + 1); c != 0 {
		t.Fatalf("ClassSize above the slab = %d; want 0", c)
	}
}

func TestArena_CapLockedAppendDoesNotCorruptNeighbour(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	x := a.Alloc(10)
	y := a.Alloc(64)
	for i := range y {
		y[i] = 0xAA
	}
	if len(x) != 10 || cap(x) != 10 {
		t.Fatalf("Alloc(10): len %d cap %d; want 10, 10", len(x), cap(x))
	}
	x2 := append(x, make([]byte, 200)...)
	for i := range x2 {
		x2[i] = 0x55
	}
	if a.Owns(x2) {
		t.Fatal("append past the capacity stayed in the arena")
	}
	for i, c := range y {
		if c != 0xAA {
			t.Fatalf("neighbour byte %d changed to %#x", i, c)
		}
	}
}

func TestArena_AllocZeroOwnsAChunk(t *testing.T) {
	a := mustArena(t, 8, 1024, 2)
	b := a.Alloc(0)
	c := a.Alloc(0)
	if b == nil || len(b) != 0 || cap(b) != 0 || addr(b) == addr(c) {
		t.Fatalf("Alloc(0) = nil %v len %d cap %d, distinct %v", b == nil, len(b), cap(b), addr(b) != addr(c))
	}
	if !a.Owns(b) || !a.DecRef(b) || a.Owns(b) || !a.DecRef(c) {
		t.Fatal("Alloc(0) buffers are not tracked")
	}
}

func TestArena_TooLargeReturnsNilAndErrTooLarge(t *testing.T) {
	a := mustArena(t, 8, 1024, 2)
	if b := a.Alloc(1025); b != nil {
		t.Fatalf("Alloc(1025) = len %d; want nil", len(b))
	}
	if b, err := a.TryAlloc(1025); b != nil || !errors.Is(err, slab.ErrTooLarge) {
		t.Fatalf("TryAlloc(1025) = %v, %v; want nil, ErrTooLarge", b, err)
	}
	if b, err := a.TryAlloc(1024); err != nil || len(b) != 1024 {
		t.Fatalf("TryAlloc(1024) = len %d, %v", len(b), err)
	}
	if s := readStats(a); s.Failures != 2 || s.Allocs != 1 {
		t.Fatalf("failures %d allocs %d; want 2, 1", s.Failures, s.Allocs)
	}
}

func TestArena_MallocFailureIsErrNoSpace(t *testing.T) {
	slabs := 1
	a, err := slab.NewArena(64, 256, 2, func(n int) []byte {
		if slabs == 0 {
			return nil
		}
		slabs--
		return make([]byte, n)
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := a.TryAlloc(64); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := a.TryAlloc(64); b != nil || !errors.Is(err, slab.ErrNoSpace) {
		t.Fatalf("TryAlloc past malloc = %v, %v; want nil, ErrNoSpace", b, err)
	}
	if s := readStats(a); s.Failures != 1 || s.LiveObjects != 4 || s.Grows != 1 {
		t.Fatalf("after a failed grow: %v", &s)
	}
}

func TestArena_NegativeSizePanics(t *testing.T) {
	a := mustArena(t, 8, 1024, 2)
	memtest.CheckPanic(t, "memkit/slab: negative size", func() { a.Alloc(-1) })
	memtest.CheckPanic(t, "memkit/slab: negative size", func() { a.TryAlloc(-1) })
	memtest.CheckPanic(t, "memkit/slab: negative size", func() { a.ClassSize(-1) })
}

func TestArena_AddRefDecRef(t *testing.T) {
	a := mustArena(t, 8, 1024, 2)
	b := a.Alloc(100)
	a.AddRef(b)
	a.AddRef(b[10:20]) // a re-slice inside the chunk names the same chunk
	if a.DecRef(b) || a.DecRef(b[50:]) {
		t.Fatal("DecRef reported the last reference early")
	}
	if !a.DecRef(b[:0]) {
		t.Fatal("DecRef of the last reference reported false")
	}
	if a.Owns(b) {
		t.Fatal("Owns a freed chunk")
	}
}

// The other methods on a freed chunk's buffer are rows of TestMistakes.
func TestArena_BufToLocOfAFreeChunkPanics(t *testing.T) {
	a := mustArena(t, 8, 1024, 2)
	b := a.Alloc(100)
	keep := a.Alloc(100) // keeps the slab from being released
	a.DecRef(b)
	wantMisuse(t, "memkit/slab: use of a free chunk", "BufToLoc", checked.StaleHandle, func() { a.BufToLoc(b) })
	slab.PublishStats(a) // b's DecRef took the hot path, which publishes every PubEvery
	if s := readStats(a); s.BadFrees != 0 || s.LiveObjects != 1 || s.Frees != 1 {
		t.Fatalf("after a refused BufToLoc: %v", &s)
	}
	a.DecRef(keep)
}

func TestArena_StaleLocPanics(t *testing.T) {
	a := mustArena(t, 8, 1024, 2)
	keep := a.Alloc(100)
	b := a.Alloc(100)
	loc := a.BufToLoc(b)
	a.DecRef(b)
	wantMisuse(t, "memkit/slab: stale handle", "LocToBuf", checked.StaleHandle, func() { a.LocToBuf(loc) })
	wantMisuse(t, "memkit/slab: stale handle", "LocAddRef", checked.StaleHandle, func() { a.LocAddRef(loc) })
	wantMisuse(t, "memkit/slab: stale handle", "LocDecRef", checked.StaleHandle, func() { a.LocDecRef(loc) })

	// The chunk is handed out again: the old Loc must not reach the new owner.
	a.FlushQuarantine()
	c := a.Alloc(100)
	if addr(c) != addr(b) {
		t.Fatal("the freed chunk was not reused")
	}
	wantMisuse(t, "memkit/slab: stale handle", "LocDecRef", checked.StaleHandle, func() { a.LocDecRef(loc) })
	wantMisuse(t, "memkit/slab: stale handle", "LocToBuf", checked.StaleHandle, func() { a.LocToBuf(loc) })
	if !a.Owns(c) {
		t.Fatal("a stale LocDecRef freed the new owner's chunk")
	}
	if s := readStats(a); s.BadFrees != 2 {
		t.Fatalf("BadFrees %d; want 2", s.BadFrees)
	}
	a.DecRef(c)
	a.DecRef(keep)
}

func TestArena_StaleLocAfterSlabReleaseAndReuse(t *testing.T) {
	a := mustArena(t, 64, 256, 2, slab.WithIdleSlabs(0))
	b := a.Alloc(64)
	loc := a.BufToLoc(b)
	a.DecRef(b) // releases the slab
	a.FlushQuarantine()
	if a.Slabs() != 0 {
		t.Fatalf("slabs %d; want 0", a.Slabs())
	}
	wantMisuse(t, "memkit/slab: stale handle", "LocToBuf", checked.StaleHandle, func() { a.LocToBuf(loc) })
	c := a.Alloc(64) // a new slab in the same slot
	wantMisuse(t, "memkit/slab: stale handle", "LocToBuf", checked.StaleHandle, func() { a.LocToBuf(loc) })
	wantMisuse(t, "memkit/slab: stale handle", "LocAddRef", checked.StaleHandle, func() { a.LocAddRef(loc) })
	a.DecRef(c)
}

func TestArena_ForeignBufferPanics(t *testing.T) {
	a := mustArena(t, 64, 1024, 2)
	b := a.Alloc(64)
	other := mustArena(t, 64, 1024, 2).Alloc(64)
	const want = "memkit/slab: buffer not allocated by this arena"
	for name, f := range map[string][]byte{
		"heap":  make([]byte, 64),
		"nil":   nil,
		"other": other,
	} {
		t.Run("buf="+name, func(t *testing.T) {
			if a.Owns(f) {
				t.Fatal("Owns a foreign buffer")
			}
			memtest.CheckPanic(t, want, func() { a.AddRef(f) })
			wantMisuse(t, want, "DecRef", checked.ForeignFree, func() { a.DecRef(f) })
			memtest.CheckPanic(t, want, func() { a.BufToLoc(f) })
			memtest.CheckPanic(t, want, func() { a.SetNext(f, nil) })
			if f != nil { // SetNext(b, nil) ends the chain
				memtest.CheckPanic(t, want, func() { a.SetNext(b, f) })
			}
			memtest.CheckPanic(t, want, func() { a.GetNext(f) })
		})
	}
	// A slice that runs from one chunk into the next is no buffer of the arena.
	c := a.Alloc(64)
	if addr(c) == addr(b)+64 {
		span := unsafe.Slice(unsafe.SliceData(b), 128)
		if a.Owns(span) {
			t.Fatal("Owns a slice over two chunks")
		}
		wantMisuse(t, want, "DecRef", checked.ForeignFree, func() { a.DecRef(span) })
	}
	if s := readStats(a); s.BadFrees != 4 || s.LiveObjects != 2 {
		t.Fatalf("after foreign DecRefs: %v", &s)
	}
}

// DecRef finds the chunk of a buffer by a shift for a power-of-two class
// size and by a multiplication otherwise; both must agree with the chunk
// bounds, for re-slices that end at the last byte of a chunk, for slices
// that run one byte into the next chunk, and for the slack past the last
// chunk of a slab.
func TestArena_FindsTheChunkInEveryClass(t *testing.T) {
	const slabSize = 4096
	a := mustArena(t, 24, slabSize, 1.5)
	const want = "memkit/slab: buffer not allocated by this arena"
	pow2, other := 0, 0
	for n := 1; n <= slabSize; {
		cs := a.ClassSize(n)
		n = cs + 1
		if cs&(cs-1) == 0 {
			pow2++
		} else {
			other++
		}
		t.Run(fmt.Sprintf("class=%d", cs), func(t *testing.T) {
			b1 := a.Alloc(cs) // chunk 0 of the class's first slab
			base := addr(b1)
			if perSlab := slabSize / cs; perSlab*cs < slabSize {
				slack := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b1)), perSlab*cs)), 1)
				if a.Owns(slack) {
					t.Fatal("Owns the slack past the last chunk")
				}
				wantMisuse(t, want, "DecRef", checked.ForeignFree, func() { a.DecRef(slack) })
			}
			if slabSize/cs < 2 { // one chunk per slab
				if !a.DecRef(b1[cs-1:]) || a.Owns(b1) {
					t.Fatal("DecRef of the last byte did not free the chunk")
				}
				return
			}
			b2 := a.Alloc(cs)
			if addr(b2) != base+uintptr(cs) {
				t.Fatalf("second chunk at %#x, want %#x", addr(b2), base+uintptr(cs))
			}
			span := unsafe.Slice(unsafe.SliceData(b1), cs+1)
			if a.Owns(span) {
				t.Fatal("Owns a slice over two chunks")
			}
			wantMisuse(t, want, "DecRef", checked.ForeignFree, func() { a.DecRef(span) })
			over := unsafe.Slice(unsafe.SliceData(b2[1:]), cs)
			wantMisuse(t, want, "DecRef", checked.ForeignFree, func() { a.DecRef(over) })
			if !a.DecRef(b1[cs-1:]) || a.Owns(b1) || !a.Owns(b2) {
				t.Fatal("DecRef of the last byte of chunk 0 did not free chunk 0 alone")
			}
			if !a.DecRef(b2[cs/2:]) || a.Owns(b2) {
				t.Fatal("DecRef inside chunk 1 did not free it")
			}
			wantMisuse(t, "memkit/slab: DecRef of a free chunk", "DecRef", checked.DoubleFree, func() { a.DecRef(b2) })
		})
	}
	if pow2 == 0 || other == 0 {
		t.Fatalf("classes: %d powers of two, %d others; want both", pow2, other)
	}
}

// DecRef reads a chunk's header right after the program's last write to
// the chunk. When both lie at the same offset in a 4 KiB page, the CPU
// stalls the read as if it depended on the write (4K aliasing); slabs and
// large header arrays are both page-aligned, so the arena shifts the
// headers of a slab whose chunk 0 would alias its header.
func TestArena_FirstChunkHeaderDoesNotAliasItsBytes(t *testing.T) {
	for _, slabSize := range []int{4096, 64 << 10, 1 << 20} {
		for _, n := range []int{64, 512, 4096} {
			a := mustArena(t, 64, slabSize, 2)
			b := a.Alloc(n) // chunk 0 of a fresh slab
			if off := a.HeaderPageOffset(b); off < 256 || off > 4096-256 {
				t.Errorf("slabSize=%d n=%d: header of chunk 0 at page offset %d from its bytes, want 256..3840", slabSize, n, off)
			}
			a.DecRef(b)
		}
	}
}

// TestArena_AliasSkipAtEveryOffset checks the placement rule itself for
// every offset the allocator may give the header array, since the test
// above sees only the few offsets this run's heap happens to produce.
func TestArena_AliasSkipAtEveryOffset(t *testing.T) {
	for rel := uintptr(0); rel < 4096; rel++ {
		skip := slab.AliasSkip(rel)
		if off := (rel + uintptr(skip)*slab.HeaderSize) % 4096; off < 256 || off > 4096-256 {
			t.Fatalf("array at page offset %d skips %d headers: header of chunk 0 at %d, want 256..3840", rel, skip, off)
		}
	}
}

func TestArena_LocRoundTrip(t *testing.T) {
	a := mustArena(t, 8, 1024, 2)
	b := a.Alloc(100)
	copy(b, "hello, slab")
	loc := a.BufToLoc(b)
	if loc.IsNil() || unsafe.Sizeof(loc) != 8 || slab.LocFromUint64(loc.Uint64()) != loc {
		t.Fatalf("BufToLoc: nil %v, %d bytes", loc.IsNil(), unsafe.Sizeof(loc))
	}
	got := a.LocToBuf(loc)
	if addr(got) != addr(b) || len(got) != 100 || cap(got) != 100 {
		t.Fatalf("LocToBuf: len %d cap %d same %v", len(got), cap(got), addr(got) == addr(b))
	}
	if l2 := a.BufToLoc(b[7:11]); l2 != loc {
		t.Fatalf("BufToLoc of a re-slice = %+v; want the chunk's %+v", l2, loc)
	}
	if a.LocToBuf(slab.NilLoc()) != nil || a.LocDecRef(slab.NilLoc()) {
		t.Fatal("the nil Loc is not inert")
	}
	a.LocAddRef(slab.NilLoc())
	a.LocAddRef(loc)
	if a.LocDecRef(loc) || !a.LocDecRef(loc) {
		t.Fatal("LocDecRef counts wrong")
	}
}

func TestArena_ChainFreesWholeChainWithItsHead(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	var bufs [][]byte
	for i := range 10 {
		bufs = append(bufs, a.Alloc(100+i))
	}
	for i := 1; i < len(bufs); i++ {
		a.SetNext(bufs[i-1], bufs[i])
	}
	for _, b := range bufs[1:] {
		if a.DecRef(b) {
			t.Fatal("a chained chunk was freed while its predecessor holds it")
		}
	}
	// Walk the chain as go-slab users do.
	n := 0
	for b := bufs[0]; b != nil; n++ {
		next := a.GetNext(b)
		if b2 := bufs[n]; addr(b) != addr(b2) || len(b) != len(b2) {
			t.Fatalf("chunk %d of the chain differs", n)
		}
		if n > 0 {
			a.DecRef(b) // the reference GetNext added
		}
		b = next
	}
	if n != 10 {
		t.Fatalf("chain of %d; want 10", n)
	}
	if !a.DecRef(bufs[0]) {
		t.Fatal("DecRef of the head did not free it")
	}
	if s := readStats(a); s.LiveObjects != 0 {
		t.Fatalf("after dropping the head: %v", &s)
	}
}

func TestArena_SetNextReplacesAndDropsTheOldSuccessor(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	head, mid, tail, repl := a.Alloc(64), a.Alloc(64), a.Alloc(64), a.Alloc(64)
	a.SetNext(head, mid)
	a.SetNext(mid, tail)
	a.DecRef(mid)
	a.DecRef(tail)
	// Replace mid, keeping tail: the chain holds tail through repl.
	a.SetNext(repl, tail)
	a.SetNext(head, repl)
	a.DecRef(repl)
	if a.Owns(mid) {
		t.Fatal("the replaced chunk is still allocated")
	}
	if !a.Owns(tail) || a.NextLoc(repl) != a.BufToLoc(tail) {
		t.Fatal("tail was lost")
	}
	if st := readStats(a); !a.DecRef(head) || st.LiveObjects != 3 {
		t.Fatalf("before dropping the head: %v", &st)
	}
	if st := readStats(a); st.LiveObjects != 0 {
		t.Fatalf("after dropping the head: %v", &st)
	}
}

func TestArena_ReleasesFreeSlabsAfterHysteresis(t *testing.T) {
	for _, idle := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("idle=%d", idle), func(t *testing.T) {
			var released int
			a, err := slab.NewArena(64, 1024, 2, nil, slab.WithIdleSlabs(idle),
				slab.WithFree(func(b []byte) {
					if len(b) != 1024 {
						t.Errorf("WithFree got %d bytes; want a 1024-byte slab", len(b))
					}
					released++
				}))
			if err != nil {
				t.Fatal(err)
			}
			var bufs [][]byte
			for range 16 * 6 { // six slabs of 64-byte chunks
				bufs = append(bufs, a.Alloc(64))
			}
			if a.Slabs() != 6 {
				t.Fatalf("slabs %d; want 6", a.Slabs())
			}
			for _, b := range bufs {
				a.DecRef(b)
			}
			a.FlushQuarantine()
			if want := min(idle, 6); a.Slabs() != want || released != 6-want {
				t.Fatalf("after freeing all: slabs %d released %d; want %d, %d", a.Slabs(), released, want, 6-want)
			}
			s := readStats(a)
			if s.Releases != uint64(released) || s.ReservedBytes != uint64(a.Slabs())*1024 ||
				s.Classes[0].Releases != uint64(16*released) || s.Classes[0].IdleObjects != uint64(16*a.Slabs()) {
				t.Fatalf("stats: %v", &s)
			}
			if idle == 0 {
				return // releasing at once is what idle=0 asks for
			}
			// Alloc+DecRef around an empty class does not thrash.
			for range 100 {
				a.DecRef(a.Alloc(64))
				a.FlushQuarantine()
			}
			if s := readStats(a); s.Grows > 6+1 {
				t.Fatalf("grows %d: the slab is released and regrown each time", s.Grows)
			}
		})
	}
}

func TestArena_PrefersPartialSlabs(t *testing.T) {
	a := mustArena(t, 64, 1024, 2, slab.WithIdleSlabs(0))
	var bufs [][]byte
	for range 16 * 3 {
		bufs = append(bufs, a.Alloc(64))
	}
	// Free one chunk in each slab; new chunks must come from these holes.
	for _, i := range []int{0, 16, 32} {
		a.DecRef(bufs[i])
	}
	a.FlushQuarantine()
	for _, i := range []int{0, 16, 32} {
		bufs[i] = a.Alloc(64)
	}
	if a.Slabs() != 3 {
		t.Fatalf("slabs %d; want 3", a.Slabs())
	}
	for _, b := range bufs {
		a.DecRef(b)
	}
	a.FlushQuarantine()
	if a.Slabs() != 0 {
		t.Fatalf("slabs %d after freeing all; want 0", a.Slabs())
	}
}

func TestArena_ReadStatsRowPerClass(t *testing.T) {
	a := mustArena(t, 128, 1024, 2)
	x, y := a.Alloc(100), a.Alloc(1000)
	var s memkit.Stats
	a.ReadStats(&s)
	want := "in use 1.1KiB  reserved 2KiB  live 2  allocs 2  frees 0  fallbacks 0  failures 0  grows 2  releases 0  bad frees 0\n" +
		"     class       in use     reserved    live    idle      allocs       frees   grows  releases\n" +
		"      128B         128B         1KiB       1       7           1           0       1         0\n" +
		"      256B           0B           0B       0       0           0           0       0         0\n" +
		"      512B           0B           0B       0       0           0           0       0         0\n" +
		"      1KiB         1KiB         1KiB       1       0           1           0       1         0\n"
	if got := s.String(); got != want {
		t.Fatalf("stats:\n%s\nwant:\n%s", got, want)
	}
	a.DecRef(x)
	a.DecRef(y)
}

func TestArena_HotPathsDoNotAllocate(t *testing.T) {
	skipIfChecked(t, "it records every allocation")
	a := mustArena(t, 64, 1<<20, 2)
	keep := a.Alloc(512)
	var s memkit.Stats
	a.ReadStats(&s)
	for name, f := range map[string]func(){
		"Alloc+DecRef": func() { a.DecRef(a.Alloc(512)) },
		"TryAlloc":     func() { b, _ := a.TryAlloc(4096); a.DecRef(b) },
		"AddRef+DecRef": func() {
			a.AddRef(keep)
			a.DecRef(keep)
		},
		"BufToLoc+LocToBuf": func() { _ = a.LocToBuf(a.BufToLoc(keep)) },
		"Owns":              func() { _ = a.Owns(keep) },
		"ReadStats":         func() { a.ReadStats(&s) },
		"View":              func() { _ = slab.View[record](keep) },
		"ViewSlice":         func() { _ = slab.ViewSlice[uint64](keep, 64) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocs; want 0", name, n)
		}
	}
}

// TestArena_OnePerGoroutine is the documented way to use Arenas from many
// goroutines: one each. Under the race detector it also shows that arenas
// share no state.
func TestArena_OnePerGoroutine(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := mustArena(t, 64, 4096, 2)
			m := memtest.NewModel(g)
			for i := range 2000 {
				if _, err := m.Add(a.Alloc(1 + (i*37)%3000)); err != nil {
					t.Error(err)
					return
				}
				if len(m.Live) > 20 {
					b, err := m.Remove(i % len(m.Live))
					if err != nil {
						t.Error(err)
						return
					}
					a.DecRef(b)
				}
			}
		}()
	}
	wg.Wait()
}
