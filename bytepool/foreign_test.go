package bytepool_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/offheap"
)

// foreign is a 4 KiB buffer another memkit allocator owns, live, filled
// with the pattern of its seed: what a foreign Put must leave alone.
type foreign struct {
	owner string // as the panic names it
	buf   []byte
	seed  uint64
}

// panicOwned is the release build's panic for a Put of memory owner owns.
func panicOwned(owner string) string {
	return fmt.Sprintf("memkit/bytepool: Put of memory %s owns: return it to %s instead", owner, owner)
}

// foreigners returns one live 4 KiB buffer of each allocator that
// registers its memory (internal/owned), made once for the test binary and
// never given back, so that fuzz inputs can share them.
var foreigners = sync.OnceValues(func() ([]foreign, error) {
	fp, err := buffer.NewFixedPool(4, 4096)
	if err != nil {
		return nil, err
	}
	fb := fp.Checkout()
	if _, err := fb.Write(make([]byte, 4096)); err != nil {
		return nil, err
	}
	bounded, err := bytepool.New(bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(1<<20))
	if err != nil {
		return nil, err
	}
	ex, err := extent.New()
	if err != nil {
		return nil, err
	}
	exOff, err := extent.New(extent.WithOffHeap())
	if err != nil {
		return nil, err
	}
	off, err := offheap.Alloc(4096)
	if err != nil {
		return nil, err
	}
	fs := []foreign{
		{owner: "buffer.FixedPool", buf: fb.Bytes()},
		{owner: "a Bounded bytepool", buf: bounded.Get(4096)},
		{owner: "extent", buf: ex.Malloc(4096)},
		{owner: "extent", buf: exOff.Malloc(4096)},
		{owner: "offheap", buf: off},
	}
	for i := range fs {
		if cap(fs[i].buf) != 4096 {
			return nil, fmt.Errorf("%s's buffer has capacity %d, not 4096", fs[i].owner, cap(fs[i].buf))
		}
		fs[i].buf = fs[i].buf[:4096]
		fs[i].seed = uint64(1000 + i)
		memtest.Fill(fs[i].buf, fs[i].seed)
	}
	return fs, nil
})

// putForeign puts f's buffer into p, an Elastic pool, and returns an error
// unless the build refused it as the misuse table says and f's bytes are
// intact.
func putForeign(p *bytepool.Pool, f foreign) error {
	if checked.Enabled {
		if mu := misuseOf(func() { p.Put(f.buf) }); mu == nil || mu.Kind != checked.ForeignFree {
			return fmt.Errorf("Put of %s's memory: misuse %v; want a foreign free", f.owner, mu)
		}
	} else if msg, want := memtest.PanicOf(func() { p.Put(f.buf) }), panicOwned(f.owner); msg != want {
		return fmt.Errorf("Put of %s's memory: panic %q; want %q", f.owner, msg, want)
	}
	if err := memtest.Verify(f.buf, f.seed); err != nil {
		return fmt.Errorf("%s's buffer after the Put: %w", f.owner, err)
	}
	return nil
}

// An Elastic pool, which keeps what it is given, refuses memory each
// memkit allocator that registers its memory owns: a FixedPool's buffer, a
// Bounded pool's, an extent range on the heap or off it, an offheap
// mapping. Kept, the buffer would have two owners, and an off-heap one
// would fault inside the pool once unmapped.
func TestElastic_PutOfAnotherAllocatorsMemoryPanics(t *testing.T) {
	fs, err := foreigners()
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]bytepool.Option{nil, {bytepool.WithZeroing()}, {bytepool.WithExactStats()}} {
		p := mustNew(t, opts...)
		intact := bystanders(p, 6, 0)
		for _, f := range fs {
			if err := putForeign(p, f); err != nil {
				t.Fatal(err)
			}
		}
		if err := intact(); err != nil {
			t.Fatal(err)
		}
		// Nothing of theirs was kept: the next Gets are the pool's own.
		for range 8 {
			b := p.Get(4096)
			for _, f := range fs {
				if memtest.Overlap(b, f.buf) {
					t.Fatalf("Get handed out %s's buffer", f.owner)
				}
			}
		}
	}
}
