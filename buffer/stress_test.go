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
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tag := byte(w + 1)
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
		}()
	}
	wg.Wait()
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
