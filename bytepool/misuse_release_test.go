//go:build !memkitdebug

package bytepool_test

import (
	"errors"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

// What the release build does with each mistake of the misuse suite
// (misuse_test.go runs under -tags memkitdebug): caught with the exact
// panic, counted, or, where it cannot tell without per-buffer state, what
// happens then. No mistake here writes into another live buffer by itself;
// the two that can lead to it, a second Put after the buffer was handed out
// again and a moved-start Put of an Elastic pool's buffer, do so only if the
// caller goes on to use the memory it gave up, and are documented as such.

func TestRelease_DoubleFree(t *testing.T) {
	// Caught in O(1) while the buffer is idle in the pool: a Bounded pool
	// keeps one bit per buffer, an Elastic pool a mark in the first word of
	// each idle buffer.
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		for _, put := range []func([]byte){p.Put, p.NewCache().Put} {
			b := p.Get(1000)
			put(b)
			memtest.CheckPanic(t, "memkit/bytepool: double free", func() { put(b) })
			if x, y := p.Get(1000), p.Get(1000); addr(x) == addr(y) {
				t.Fatal("one buffer handed out twice after a caught double free")
			}
		}
	})
	t.Run("policy=elastic/after-reuse", func(t *testing.T) {
		if race.Enabled {
			t.Skip("sync.Pool drops buffers at random under the race detector")
		}
		p := mustNew(t)
		// The mark is cleared when the buffer is handed out, so a user's
		// bytes never look idle: Put after Get, Get, Put again works.
		c := p.NewCache()
		b := c.Get(1000)
		c.Put(b)
		b = p.Get(1000)
		p.Put(b)
		// Not caught: a second Put after the pool handed the buffer out
		// again, to a new user whose writes cleared the mark. The buffer is
		// then idle while in use, so a later Get shares it; only the checked
		// build (or a Bounded pool) reports it.
		q := mustNew(t)
		late := q.Get(1000)
		q.Put(late)
		owner := q.Get(1000)
		if addr(owner) != addr(late) {
			t.Fatal("LIFO reuse expected")
		}
		q.Put(late)
		if x := q.Get(1000); addr(x) != addr(owner) {
			t.Fatal("documented hazard changed: update the docs")
		}
	})
}

func TestRelease_ForeignFree(t *testing.T) {
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		// A capacity that is no class: dropped, counted, never handed out.
		foreign := make([]byte, 100)
		p.Put(foreign)
		if s := readStats(p); s.BadFrees != 1 || s.Frees != 0 {
			t.Fatalf("BadFrees %d Frees %d", s.BadFrees, s.Frees)
		}
		for range 200 {
			if addr(p.Get(100)) == addr(foreign) {
				t.Fatal("a foreign buffer was filed into a class")
			}
		}
	})
	t.Run("class-capacity", func(t *testing.T) {
		if race.Enabled {
			t.Skip("sync.Pool drops buffers at random under the race detector")
		}
		// With a class's capacity, an Elastic pool cannot tell foreign
		// memory from its own and keeps it: memory-safe, since the caller
		// gave it up, but counted as a Free. A Bounded pool takes it for a
		// heap fallback and drops it.
		p := mustNew(t)
		foreign := make([]byte, 128)
		p.Put(foreign)
		if addr(p.Get(128)) != addr(foreign) {
			t.Fatal("documented behaviour changed: update the docs")
		}
		b := mustNew(t, bytepool.WithPolicy(bytepool.Bounded))
		b.Put(foreign)
		for range 200 {
			if addr(b.Get(128)) == addr(foreign) {
				t.Fatal("a Bounded pool handed out foreign memory")
			}
		}
	})
}

func TestRelease_MovedStart(t *testing.T) {
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		// Capacity no class: dropped and counted.
		b := p.Get(4096)
		p.Put(b[1:])
		if s := readStats(p); s.BadFrees != 1 || s.Frees != 0 {
			t.Fatalf("BadFrees %d Frees %d", s.BadFrees, s.Frees)
		}
		p.Put(b)
	})
	// A Bounded pool also rejects a moved start whose capacity is a class
	// (TestBounded_PutMovedStartOfAnotherClassIsBadFree). An Elastic pool
	// cannot: b[16:] of a 96-byte buffer fits the 80-byte class and is
	// filed there; its memory is b's, so it is safe only while the caller
	// neither uses b nor puts it back. Only the checked build reports it.
}

func TestRelease_WriteAfterFreeAndOverflowStayInTheBuffer(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops buffers at random under the race detector")
	}
	// Neither is detected in release: a write after Put lands in the idle
	// buffer (the next Get sees it, as it sees any previous user's bytes
	// unless the pool zeroes, but for the first 8, where an Elastic pool
	// keeps its idle mark and which Get clears), and a write into the slack
	// past the length
	// stays within the buffer's capacity, which is locked to its class, so
	// no other buffer is touched.
	p := mustNew(t)
	neighbour := p.Get(100)
	memtest.Fill(neighbour, 1)
	b := p.Get(100)
	b[:cap(b)][cap(b)-1] = 7
	p.Put(b)
	b[8] = 9
	if err := memtest.Verify(neighbour, 1); err != nil {
		t.Fatal(err)
	}
	if c := p.Get(100); addr(c) != addr(b) || c[8] != 9 || [8]byte(c) != [8]byte{} {
		t.Fatal("documented behaviour changed: update the docs")
	}
}

func TestRelease_LeaksNeedTheCheckedBuild(t *testing.T) {
	if _, err := memkit.Leaks(mustNew(t)); !errors.Is(err, memkit.ErrNotChecked) {
		t.Fatalf("Leaks = %v; want ErrNotChecked", err)
	}
}
