package buffer_test

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/memkit/memkit/buffer"
)

// TestPool_StressKeptStorage: goroutines get Buffers, whose headers keep
// their storage while idle (internal/keep), fill them with their owner's
// tag, hand some to each other and Free them, through forced GCs at
// GOGC=1 (which drop idle headers and their storage). No storage is ever
// out to two owners (the tags read back in full before each Free), and
// after quiescence the pool's exact stats show nothing in use: every Get
// and every kept storage was counted back.
func TestPool_StressKeptStorage(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	p := mustPool(t, buffer.WithDefaultSize(1000))
	const workers = 8
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	handoff := make(chan *buffer.Buffer, 8)
	check := func(b *buffer.Buffer, tag byte) {
		for _, c := range b.Bytes() {
			if c != tag {
				t.Errorf("a Buffer of owner %d holds a byte of owner %d", tag, c)
				return
			}
		}
	}
	eachOwner(workers, func(tag byte) {
		for r := range rounds {
			b := p.Get()
			for range 100 + r%900 {
				b.WriteByte(tag)
			}
			if r%7 == 0 { // hand it over, with its tag, for another owner to Free
				select {
				case handoff <- b:
					continue
				default:
				}
			}
			select {
			case o := <-handoff:
				c := o.Bytes()[0]
				check(o, c)
				o.Free()
			default:
			}
			check(b, tag)
			b.Free()
			if r%500 == 0 {
				runtime.GC()
			}
		}
	})
	close(handoff)
	for o := range handoff {
		check(o, o.Bytes()[0])
		o.Free()
	}
	runtime.GC()
	runtime.GC()
	if s := readStats(p); s.LiveObjects != 0 || s.InUseBytes != 0 || s.Allocs != s.Frees {
		t.Fatalf("after quiescence: %v", &s)
	}
}

// TestFixedPool_StressOwnerTags: goroutines check out buffers of a pool
// of 16 (fewer than they hold at once, so some Checkouts miss), fill each
// with their owner's tag, hold a few, hand some to each other to Close,
// through forced GCs at GOGC=1. No buffer is ever out to two owners (every
// tag reads back before its Close), and after quiescence every reserved
// buffer is idle and every Checkout was closed once: Len is the count,
// Frees equal Allocs, nothing is live and no Close was refused.
func TestFixedPool_StressOwnerTags(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	const count, size, workers = 16, 512, 8
	p := mustFixed(t, count, size)
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	type held struct {
		b   *buffer.Buffer
		tag byte
	}
	handoff := make(chan held, 8)
	check := func(h held) {
		for _, c := range h.b.Bytes() {
			if c != h.tag {
				t.Errorf("a buffer of owner %d holds a byte of owner %d", h.tag, c)
				return
			}
		}
		if err := h.b.Close(); err != nil {
			t.Error(err)
		}
	}
	eachOwner(workers, func(tag byte) {
		var mine []held
		for r := range rounds {
			b := p.Checkout()
			for range 1 + r%size {
				b.WriteByte(tag)
			}
			mine = append(mine, held{b, tag})
			if r%5 == 0 {
				select {
				case handoff <- mine[0]:
					mine = mine[1:]
				default:
				}
			}
			select {
			case h := <-handoff:
				check(h)
			default:
			}
			if len(mine) > 3 || (len(mine) > 0 && r%2 == 0) {
				check(mine[0])
				mine = mine[1:]
			}
			if r%300 == 0 {
				runtime.GC()
			}
		}
		for _, h := range mine {
			check(h)
		}
	})
	close(handoff)
	for h := range handoff {
		check(h)
	}
	runtime.GC()
	runtime.GC()
	st := readStats(p)
	if p.Len() != count || st.LiveObjects != 0 || st.Allocs != workers*uint64(rounds) || st.Frees != st.Allocs || st.BadFrees != 0 {
		t.Fatalf("after quiescence: Len %d, stats %v", p.Len(), &st)
	}
}

// eachOwner runs f on workers goroutines, each with its owner tag (1 to
// workers), and waits for them.
func eachOwner(workers int, f func(tag byte)) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(byte(w + 1))
		}()
	}
	wg.Wait()
}
