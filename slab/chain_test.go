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
	memtest.CheckPanic(t, "memkit/slab: negative size", func() { slab.NewChainWriter(a, 0) })
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
