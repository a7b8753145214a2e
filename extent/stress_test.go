package extent_test

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

// TestShared_StressOwnerTags runs many goroutines that Malloc from one
// Shared, fill each allocation with a pattern of their own (its owner tag),
// hand some to the next goroutine and free them whole, in parts (FreeRest,
// a middle range first) or on another goroutine, while GCs run (GOGC=1 and
// forced ones), in every build. Every allocation's pattern is checked
// before each free, so memory handed out to two owners at once, or freed
// under its owner, shows. After quiescence and two GCs every byte is
// accounted for: the counts match the calls made, nothing is in use, the
// free bytes are the reserved ones, and two Trims give every block back.
func TestShared_StressOwnerTags(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	s, err := extent.NewShared(extent.WithBlockSize(1 << 18))
	if err != nil {
		t.Fatal(err)
	}
	workers, rounds := 16, 3000
	if race.Enabled || checked.Enabled {
		rounds = 600
	}
	type held struct {
		b   []byte
		tag uint64
	}
	inbox := make([]chan held, workers)
	for w := range inbox {
		inbox[w] = make(chan held, 16)
	}
	var mallocs, frees atomic.Uint64
	// free checks h's pattern and frees it: whole, or in parts, each part's
	// pattern checked before it goes.
	free := func(h held, how int) error {
		if err := memtest.Verify(h.b, h.tag); err != nil {
			return fmt.Errorf("allocation %p of tag %#x: %v: handed out twice", &h.b[0], h.tag, err)
		}
		b := h.b
		switch n := len(b); {
		case how%3 == 0 && n > 16:
			keep := s.FreeRest(b, n/2)
			frees.Add(1)
			if err := memtest.Verify(keep, h.tag); err != nil {
				return fmt.Errorf("the kept half of %p of tag %#x: %v", &b[0], h.tag, err)
			}
			s.Free(keep)
			frees.Add(1)
		case how%3 == 1 && n > 16:
			s.Free(b[n/3 : 2*n/3])
			s.Free(b[:n/3])
			s.Free(b[2*n/3:])
			frees.Add(3)
		default:
			s.Free(b)
			frees.Add(1)
		}
		return nil
	}
	errs := make(chan error, workers)
	stopGCs := memtest.ForceGCs() // beside GOGC=1's
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []held
			for i := range rounds {
				n := 1 + (i*131+w*977)%9000
				if i%16 == 0 {
					n = 64 << 10
				}
				h := held{s.Malloc(n), uint64(w)<<40 | uint64(i)}
				mallocs.Add(1)
				if len(h.b) != n || cap(h.b) != n {
					errs <- fmt.Errorf("Malloc(%d): len %d cap %d", n, len(h.b), cap(h.b))
					return
				}
				memtest.Fill(h.b, h.tag)
				if i%4 == 0 { // the next worker frees it
					select {
					case inbox[(w+1)%workers] <- h:
					default:
						mine = append(mine, h)
					}
				} else {
					mine = append(mine, h)
				}
				select {
				case got := <-inbox[w]:
					if err := free(got, i); err != nil {
						errs <- err
						return
					}
				default:
				}
				for len(mine) > 8 {
					if err := free(mine[0], i+w); err != nil {
						errs <- err
						return
					}
					mine = mine[1:]
				}
			}
			for k, h := range mine {
				if err := free(h, k); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	stopGCs()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := range inbox { // what the workers sent last
		close(inbox[w])
		for h := range inbox[w] {
			if err := free(h, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	runtime.GC()
	runtime.GC()
	st := readStats(s)
	if idle, out, detached, gone := s.FrontAccount(); out != 0 {
		t.Errorf("front cache: %d idle, %d out, %d detached, %d gone", idle, out, detached, gone)
	}
	if st.Allocs != mallocs.Load() || st.Frees != frees.Load() || st.InUseBytes != 0 ||
		st.FreeBytes != st.ReservedBytes || st.BadFrees != 0 || st.HeapFallbacks != 0 {
		t.Fatalf("after %d Mallocs and %d Frees, every one returned: %v", mallocs.Load(), frees.Load(), &st)
	}
	s.Trim()
	s.Trim() // the first lowers the peak Trim keeps blocks for to zero
	// The front cache's idle chunks go back to their Allocators after
	// GCs (the sweep), and Trim gives their blocks back; under the race
	// detector its idle sets keep them.
	gcs := 0
	for ; gcs < 100 && readStats(s).ReservedBytes != 0 && !race.Enabled; gcs++ {
		runtime.GC()
		runtime.Gosched() // let the cleanup goroutine run
		s.Trim()
	}
	if st = readStats(s); (st.ReservedBytes != 0 || st.Releases != st.Grows) && !race.Enabled || st.InUseBytes != 0 {
		t.Fatalf("after two Trims of an idle Shared and %d GCs: %v", gcs, &st)
	}
	s.Close()
}
