package slab_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/slab"
)

func TestChain_WriteReadRoundTrip(t *testing.T) {
	for _, size := range []int{0, 1, 999, 1000, 1001, 25_000} {
		a := mustArena(t, 64, 4096, 2)
		payload := make([]byte, size)
		rng := rand.New(rand.NewPCG(1, uint64(size)))
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
		w := slab.NewChainWriter(a, 1000)
		// Write in uneven pieces.
		for p := payload; len(p) > 0; {
			k := min(len(p), 1+rng.IntN(3000))
			if n, err := w.Write(p[:k]); n != k || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			p = p[k:]
		}
		if w.Size() != int64(size) {
			t.Fatalf("Size %d; want %d", w.Size(), size)
		}
		head := w.Finish()
		if (head == nil) != (size == 0) {
			t.Fatalf("size %d: Finish = nil %v", size, head == nil)
		}
		if err := iotest.TestReader(slab.NewChainReader(a, head), payload); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		var out bytes.Buffer
		if n, err := slab.NewChainReader(a, head).WriteTo(&out); err != nil || n != int64(size) || !bytes.Equal(out.Bytes(), payload) {
			t.Fatalf("size %d: WriteTo = %d, %v, equal %v", size, n, err, bytes.Equal(out.Bytes(), payload))
		}
		if want := (size + 999) / 1000; readStats(a).LiveObjects != uint64(want) {
			t.Fatalf("size %d: %d chunks live; want %d", size, readStats(a).LiveObjects, want)
		}
		if head != nil && !a.DecRef(head) {
			t.Fatal("DecRef of the head did not free it")
		}
		slab.PublishStats(a) // a chain of one chunk frees on the hot path
		if live := readStats(a).LiveObjects; live != 0 {
			t.Fatalf("size %d: %d chunks live after dropping the head", size, live)
		}
	}
}

func TestChain_ReplaceMiddleChunk(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	w := slab.NewChainWriter(a, 4)
	io.WriteString(w, "aaaabbbbccccdd")
	head := w.Finish()
	// Replace "bbbb" with "XY": link aaaa → XY → cccc.
	b := a.GetNext(head)
	c := a.GetNext(b)
	x := a.Alloc(2)
	copy(x, "XY")
	a.SetNext(x, c)
	a.SetNext(head, x)
	a.DecRef(x)
	a.DecRef(c)
	if a.DecRef(b) != true {
		t.Fatal("the replaced chunk is still referenced")
	}
	got, err := io.ReadAll(slab.NewChainReader(a, head))
	if err != nil || string(got) != "aaaaXYccccdd" {
		t.Fatalf("after the replacement: %q, %v", got, err)
	}
	a.DecRef(head)
	if live := readStats(a).LiveObjects; live != 0 {
		t.Fatalf("%d chunks live", live)
	}
}

func TestChain_ReaderCatchesAFreedChunk(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	w := slab.NewChainWriter(a, 4)
	io.WriteString(w, "aaaabbbbcccc")
	head := w.Finish()
	r := slab.NewChainReader(a, head)
	p := make([]byte, 4)
	r.Read(p)
	a.SetNext(head, nil) // frees bbbb and cccc under the reader
	wantMisuse(t, "memkit/slab: stale handle", "LocToBuf", checked.StaleHandle, func() { r.Read(p) })
	a.DecRef(head)
}

func TestChain_WriterReportsAllocErrors(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	w := slab.NewChainWriter(a, 5000)
	if n, err := w.Write([]byte("x")); n != 0 || !errors.Is(err, slab.ErrTooLarge) {
		t.Fatalf("Write with chunks above the slab size = %d, %v", n, err)
	}
	memtest.CheckPanic(t, "memkit/slab: NewChainWriter chunk size 0 must be at least 1", func() { slab.NewChainWriter(a, 0) })
	memtest.CheckPanic(t, "memkit/slab: NewChainWriter of a nil arena", func() { slab.NewChainWriter(nil, 64) })
	memtest.CheckPanic(t, "memkit/slab: NewChainWriter of a nil arena", func() { slab.NewChainWriter((*slab.Shared)(nil), 64) })
	memtest.CheckPanic(t, "memkit/slab: NewChainReader of a nil arena", func() { slab.NewChainReader((*slab.Arena)(nil), nil) })
}

func TestChain_DoesNotAllocate(t *testing.T) {
	skipIfChecked(t, "it records every allocation")
	a := mustArena(t, 64, 64<<10, 2, slab.WithIdleSlabs(4))
	payload := make([]byte, 100_000)
	w := slab.NewChainWriter(a, 4096)
	r := slab.NewChainReader(a, nil)
	p := make([]byte, 3000)
	n := testing.AllocsPerRun(100, func() {
		w.Write(payload)
		head := w.Finish()
		r.Reset(head)
		for {
			if _, err := r.Read(p); err != nil {
				break
			}
		}
		a.DecRef(head)
	})
	if n != 0 {
		t.Fatalf("%v allocs per chain write+read; want 0", n)
	}
}

func TestChain_OnSharedArena(t *testing.T) {
	sh := mustShared(t, 64, 4096, slab.WithShards(2))
	payload := bytes.Repeat([]byte("0123456789"), 1000)
	w := slab.NewChainWriter(sh, 1000)
	w.Write(payload)
	head := w.Finish()
	got, err := io.ReadAll(slab.NewChainReader(sh, head))
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	sh.DecRef(head)
	if s := sharedStats(sh); s.LiveObjects != 0 {
		t.Fatalf("%d chunks live after dropping the head", s.LiveObjects)
	}
}

// chainArena is what the chain misuse tests need of an Arena or a Shared.
type chainArena interface {
	slab.Chainer
	Owns(buf []byte) bool
	LocDecRef(l slab.Loc) bool
}

// checkChainHoldsItsReference makes the mistake of issue 13's first case
// on the chunk next, chained after head: a DecRef too many, which drops the
// reference the chain holds. It must panic at that call, and leave the
// chain whole: dropping head frees both chunks once each, so that the next
// allocations are all distinct and keep's bytes survive.
func checkChainHoldsItsReference(t *testing.T, a chainArena, head, next, keep []byte, byLoc bool) {
	t.Helper()
	memtest.Fill(keep, 7)
	a.SetNext(head, next)
	loc := a.BufToLoc(next)
	if a.DecRef(next) {
		t.Fatal("DecRef of a chained chunk dropped its last reference")
	}
	const msg = "memkit/slab: DecRef of a chunk whose only references are its chain links (DecRef twice?)"
	if byLoc {
		wantMisuse(t, msg, "DecRef", checked.DoubleFree, func() { a.LocDecRef(loc) })
	} else {
		wantMisuse(t, msg, "DecRef", checked.DoubleFree, func() { a.DecRef(next) })
	}
	if !a.Owns(next) || a.NextLoc(head) != loc {
		t.Fatal("the refused DecRef changed the chain")
	}
	if !a.DecRef(head) {
		t.Fatal("DecRef of the head did not free it")
	}
	if a.Owns(next) || a.Owns(head) {
		t.Fatal("dropping the head did not free the chain")
	}
	seen := map[uintptr]bool{addr(keep): true}
	var got [][]byte
	for range 64 {
		b, err := a.TryAlloc(len(next))
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr(b)] {
			t.Fatalf("chunk %#x handed out twice", addr(b))
		}
		seen[addr(b)] = true
		memtest.Fill(b, 9)
		got = append(got, b)
	}
	if err := memtest.Verify(keep, 7); err != nil {
		t.Fatal(err)
	}
	for _, b := range got {
		a.DecRef(b)
	}
	a.DecRef(keep)
}

func TestArena_DecRefTwiceOfAChainedChunkPanics(t *testing.T) {
	for _, byLoc := range []bool{false, true} {
		a := mustArena(t, 64, 1<<16, 2)
		checkChainHoldsItsReference(t, a, a.Alloc(64), a.Alloc(64), a.Alloc(64), byLoc)
		if s := readStats(a); s.BadFrees != 1 || s.LiveObjects != 0 {
			t.Fatalf("stats %v", &s)
		}
	}
}

func TestShared_DecRefTwiceOfAChainedChunkPanics(t *testing.T) {
	for _, other := range []int{0, 1} { // next in head's shard, then in another
		sh := mustShared(t, 64, 1<<16, slab.WithShards(4))
		checkChainHoldsItsReference(t, sh, sh.AllocOn(0, 64), sh.AllocOn(other, 64), sh.AllocOn(0, 64), false)
		if s := sharedStats(sh); s.BadFrees != 1 || s.LiveObjects != 0 {
			t.Fatalf("shard %d: stats %v", other, &s)
		}
	}
}
