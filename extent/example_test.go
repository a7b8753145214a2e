package extent_test

import (
	"errors"
	"fmt"
	"sync"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/stats"
)

func Example() {
	a, err := extent.New()
	if err != nil {
		panic(err)
	}
	buf := a.Malloc(1024) // exactly 1024 bytes
	part1, part2, part3 := buf[:256], buf[256:512], buf[512:]
	copy(part3, "part 3 data")
	a.Free(part1) // free any sub-slice...
	a.Free(part2)
	fmt.Println(string(part3[:11])) // ...the rest stays allocated
	a.Free(part3)
	// Trim merges every freed range (the checked build holds them back
	// for a while) and keeps the block: it held the peak since New.
	a.Trim()

	var s memkit.Stats
	a.PublishStats() // figures as of now, for ReadStats on any goroutine
	a.ReadStats(&s)
	// Coalesced into one range: the largest free range is all free memory.
	fmt.Println(s.FreeBytes, s.LargestFree, s.Fragmentation())
	// Output:
	// part 3 data
	// 1048576 1048576 0
}

func ExampleNew() {
	a, err := extent.New(
		extent.WithBlockSize(4<<20),
		extent.WithBudget(64<<20),
		extent.WithOffHeap(), // blocks from mmap, invisible to the GC
	)
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b := a.Malloc(1500)
	fmt.Println(len(b), cap(b))

	_, err = extent.New(extent.WithBlockSize(10))
	fmt.Println(err)
	// Output:
	// 1500 1500
	// memkit/extent: BlockSize 10 must be between 64 and 1GiB
}

func ExampleAllocator_FreeRest() {
	a, _ := extent.New()
	pkt := a.Malloc(1500)
	n := copy(pkt, "GET / HTTP/1.1\r\n") // the packet turned out short
	pkt = a.FreeRest(pkt, n)             // keep n bytes, free the other 1484
	fmt.Printf("%q %d\n", pkt, cap(pkt))
	var s memkit.Stats
	a.PublishStats() // figures as of now, for ReadStats on any goroutine
	a.ReadStats(&s)
	fmt.Println("in use", s.InUseBytes)
	// Output:
	// "GET / HTTP/1.1\r\n" 16
	// in use 16
}

// Borrow hands out scratch memory with no bookkeeping; Recycle takes it all
// back at once.
func ExampleAllocator_Borrow() {
	a, _ := extent.New()
	for range 3 {
		scratch := a.Borrow(4096)
		key := a.Borrow(32)
		copy(key, "request-42")
		_ = scratch
		a.Recycle() // scratch and key must not be used after this
	}
	var s memkit.Stats
	a.PublishStats() // figures as of now, for ReadStats on any goroutine
	a.ReadStats(&s)
	fmt.Println("allocs", s.Allocs, "in use", stats.FormatBytes(s.InUseBytes)) // one 64 KiB chunk, reused
	// Output: allocs 0 in use 64KiB
}

func ExampleAllocator_TryMalloc() {
	a, _ := extent.New(extent.WithBlockSize(4096), extent.WithBudget(4096))
	b, _ := a.TryMalloc(4000)
	_, err := a.TryMalloc(200)
	fmt.Println(errors.Is(err, extent.ErrBudget))
	c := a.Malloc(200) // Malloc falls back to the heap instead
	var s memkit.Stats
	a.PublishStats() // figures as of now, for ReadStats on any goroutine
	a.ReadStats(&s)
	fmt.Println("fallbacks", s.HeapFallbacks, "failures", s.Failures)
	a.Free(b)
	a.Free(c)
	// Output:
	// true
	// fallbacks 1 failures 1
}

// Trim gives back idle blocks, but keeps what the peak since the previous
// Trim needed.
func ExampleAllocator_Trim() {
	a, _ := extent.New(extent.WithBlockSize(64 << 10))
	var bufs [][]byte
	for range 8 {
		bufs = append(bufs, a.Malloc(60<<10)) // one a block
	}
	for _, b := range bufs {
		a.Free(b)
	}
	fmt.Println(a.Trim()) // within the peak since New: kept
	fmt.Println(a.Trim()) // idle for a whole Trim period: released
	// Output:
	// 0
	// 524288
}

// A Shared allocator frees from any goroutine.
func ExampleNewShared() {
	s, _ := extent.NewShared()
	frames := make(chan []byte, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Free(<-frames) // freed on another goroutine
	}()
	frames <- s.Malloc(1200)
	<-done
	var st memkit.Stats
	s.ReadStats(&st)
	fmt.Println("allocs", st.Allocs, "frees", st.Frees, "in use", st.InUseBytes)
	// Output: allocs 1 frees 1 in use 0
}

// Goroutines building one frame borrow scratch memory from a Shared
// allocator; once the frame is done, one Recycle ends every Borrow.
func ExampleShared_Borrow() {
	s, _ := extent.NewShared()
	parts := make([][]byte, 4)
	var wg sync.WaitGroup
	for i := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := s.Borrow(16) // scratch: no Free, valid until Recycle
			n := copy(b, fmt.Sprintf("part %d", i))
			parts[i] = b[:n]
		}()
	}
	wg.Wait()
	for _, p := range parts {
		fmt.Println(string(p))
	}
	s.Recycle() // every borrower is done: parts must not be used after this
	// Output:
	// part 0
	// part 1
	// part 2
	// part 3
}

func ExampleRecyclable() {
	a, _ := extent.New()
	frame := extent.NewRecyclable(a)
	hdr := frame.NextN(12)
	payload := frame.NextN(1400)
	copy(hdr, "RTP header..")
	_ = payload
	fmt.Println(frame.Len())
	frame.Recycle() // frees both pieces
	var s memkit.Stats
	a.PublishStats() // figures as of now, for ReadStats on any goroutine
	a.ReadStats(&s)
	fmt.Println("in use", s.InUseBytes)
	// Output:
	// 2
	// in use 0
}

// WithBudget is the budget; WithBudgetAlert reports when the memory held
// crosses a threshold, for load shedding.
func ExampleWithBudgetAlert() {
	a, _ := extent.New(
		extent.WithBlockSize(64<<10),
		extent.WithBudget(256<<10),
		extent.WithBudgetAlert(128<<10, func(used int64, above bool) {
			fmt.Println("reserved", stats.FormatBytes(uint64(used)), "above", above)
		}),
	)
	var bufs [][]byte
	for range 3 {
		bufs = append(bufs, a.Malloc(60<<10)) // a block each
	}
	for _, b := range bufs {
		a.Free(b)
	}
	a.Trim()
	a.Trim()
	// Output:
	// reserved 128KiB above true
	// reserved 64KiB above false
}
