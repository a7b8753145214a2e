package slab_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/slab"
)

// The seed's first walk-through: an int and a float stored in slab buffers.
func Example() {
	arena, err := slab.NewArena(8, 1024, 2, nil)
	if err != nil {
		panic(err)
	}
	intBuf := arena.Alloc(8) // 8 bytes for an int64
	binary.LittleEndian.PutUint64(intBuf, 57555)
	fmt.Println("Integer stored in buffer:", binary.LittleEndian.Uint64(intBuf))

	floatBuf := arena.Alloc(8)
	binary.LittleEndian.PutUint64(floatBuf, math.Float64bits(123.456))
	fmt.Println("Float stored in buffer:", math.Float64frombits(binary.LittleEndian.Uint64(floatBuf)))

	fmt.Println(arena.DecRef(intBuf), arena.DecRef(floatBuf)) // last references: freed
	// Output:
	// Integer stored in buffer: 57555
	// Float stored in buffer: 123.456
	// true true
}

func ExampleNewArena() {
	// go-slab's parameters: classes from 64 bytes, doubling, in 1 MiB slabs
	// from the Go heap (nil malloc).
	a, err := slab.NewArena(64, 1<<20, 2, nil, slab.WithIdleSlabs(2))
	if err != nil {
		panic(err)
	}
	b := a.Alloc(100)
	fmt.Println(len(b), cap(b), a.ClassSize(100)) // cap locked to the request
	a.DecRef(b)

	_, err = slab.NewArena(64, 1<<20, 1, nil)
	fmt.Println(err)
	// Output:
	// 100 100 128
	// memkit/slab: growthFactor 1 must be greater than 1
}

// Person is the seed's record: fixed-size text fields, no Go pointers.
type Person struct {
	Name    [25]byte
	Surname [25]byte
	Age     int
}

// The seed's Person record, written through a typed view instead of an
// unsafe cast.
func ExampleView() {
	arena, _ := slab.NewArena(8, 1024, 2, nil)
	buf := arena.Alloc(int(unsafe.Sizeof(Person{})))
	p := slab.View[Person](buf)
	slab.SetString(p.Name[:], "John")
	slab.SetString(p.Surname[:], "Doe")
	p.Age = 30
	fmt.Println(slab.GetString(p.Name[:]), slab.GetString(p.Surname[:]), p.Age)
	arena.DecRef(buf)
	// Output: John Doe 30
}

// Person2 holds strings, which are Go pointers: the GC would not see them
// in slab memory, so View refuses the type.
func ExampleView_refusesPointers() {
	arena, _ := slab.NewArena(8, 1024, 2, nil)
	buf := arena.Alloc(int(unsafe.Sizeof(Person2{})))
	defer arena.DecRef(buf)
	defer func() { fmt.Println(recover()) }()
	slab.View[Person2](buf).Name = "Matteo"
	// Output: memkit/slab: Person2.Name is a string: Go pointers cannot live in slab memory
}

// Data is the seed's list record, with the name as fixed-size text.
type Data struct {
	Name [16]byte
	Age  int64
}

// The seed's chained "video": one chunk per minute, linked with SetNext,
// walked with GetNext, one minute replaced without touching the others,
// and the whole chain released by dropping its head.
func ExampleArena_SetNext() {
	arena, _ := slab.NewArena(64, 4096, 2, nil)
	minutes := make([][]byte, 10)
	for i := range minutes {
		minutes[i] = arena.Alloc(100)
		copy(minutes[i], fmt.Sprintf("minute %d\x00", i)) // chunks are not zeroed
		if i > 0 {
			arena.SetNext(minutes[i-1], minutes[i]) // the chain holds minute i
			arena.DecRef(minutes[i])                // so we need not
		}
	}
	head := minutes[0]

	// Replace minute 5: link 4 → new → 6, which frees the old minute 5.
	m4, m6 := minutes[4], minutes[6]
	fresh := arena.Alloc(100)
	copy(fresh, "minute 5, re-cut\x00")
	arena.SetNext(fresh, m6)
	arena.SetNext(m4, fresh)
	arena.DecRef(fresh)

	// Walk the chain; GetNext adds a reference the walker drops.
	for b := head; b != nil; {
		if b[7] == '5' || b[7] == '9' {
			fmt.Println(string(b[:clen(b)]))
		}
		next := arena.GetNext(b)
		if &b[0] != &head[0] {
			arena.DecRef(b)
		}
		b = next
	}

	arena.DecRef(head) // frees all ten chunks
	var s memkit.Stats
	arena.ReadStats(&s)
	fmt.Println("live", s.LiveObjects, "allocs", s.Allocs, "frees", s.Frees)
	// Output:
	// minute 5, re-cut
	// minute 9
	// live 0 allocs 11 frees 11
}

func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

// TryAlloc reports why an allocation failed; Alloc returns nil.
func ExampleArena_TryAlloc() {
	arena, _ := slab.NewArena(64, 4096, 2, nil)
	_, err := arena.TryAlloc(5000)
	fmt.Println(errors.Is(err, slab.ErrTooLarge), arena.Alloc(5000) == nil)
	// Output: true true
}

// ReadStats reports a row per chunk class: the per-slabClass dump go-slab
// users chart, in the shared memkit shape.
func ExampleArena_ReadStats() {
	arena, _ := slab.NewArena(128, 1024, 2, nil)
	var bufs [][]byte
	for range 15 {
		bufs = append(bufs, arena.Alloc(100))
	}
	bufs = append(bufs, arena.Alloc(1000))
	var s memkit.Stats
	arena.ReadStats(&s)
	fmt.Print(s.String())
	for _, b := range bufs {
		arena.DecRef(b)
	}
	// Output:
	// in use 2.9KiB  reserved 3KiB  live 16  allocs 16  frees 0  fallbacks 0  failures 0  grows 3  releases 0  bad frees 0
	//      class       in use     reserved    live    idle      allocs       frees   grows  releases
	//       128B       1.9KiB         2KiB      15       1          15           0       2         0
	//       256B           0B           0B       0       0           0           0       0         0
	//       512B           0B           0B       0       0           0           0       0         0
	//       1KiB         1KiB         1KiB       1       0           1           0       1         0
}

// A Shared arena has the Arena's methods and may be used from many
// goroutines at once; a buffer may be freed on another goroutine than the
// one that allocated it.
func ExampleNewShared() {
	sh, err := slab.NewShared(64, 1<<20, 2, nil)
	if err != nil {
		panic(err)
	}
	bufs := make(chan []byte, 8)
	go func() {
		for range 8 {
			b := sh.Alloc(100)
			copy(b, "from the producer")
			bufs <- b
		}
		close(bufs)
	}()
	n := 0
	for b := range bufs {
		n += len(b)
		sh.DecRef(b) // freed on the consumer's goroutine
	}
	var s memkit.Stats
	sh.ReadStats(&s)
	fmt.Println(n, "bytes; live", s.LiveObjects, "allocs", s.Allocs, "frees", s.Frees)
	// Output: 800 bytes; live 0 allocs 8 frees 8
}

// A payload streamed into a chain of 4-byte chunks and read back; the
// chain goes with its head.
func ExampleChainWriter() {
	arena, _ := slab.NewArena(8, 1024, 2, nil)
	w := slab.NewChainWriter(arena, 4)
	fmt.Fprintf(w, "a payload larger than one chunk")
	head := w.Finish()

	var sb strings.Builder
	slab.NewChainReader(arena, head).WriteTo(&sb)
	fmt.Println(sb.String())

	arena.DecRef(head)
	var s memkit.Stats
	arena.ReadStats(&s)
	fmt.Println("chunks written", s.Allocs, "live", s.LiveObjects)
	// Output:
	// a payload larger than one chunk
	// chunks written 8 live 0
}

// A frame published to several subscribers at once: AddRefN gives each
// subscriber its own reference in one call, each drops it when done, on its
// own goroutine, and the last DecRef frees the chunk.
func ExampleShared_AddRefN() {
	sh, err := slab.NewShared(64, 64<<10, 2, nil)
	if err != nil {
		panic(err)
	}
	frame := sh.Alloc(512)
	n := copy(frame, "frame 1")
	const subscribers = 3
	sh.AddRefN(frame, subscribers) // beside the publisher's own reference
	done := make(chan string, subscribers)
	for range subscribers {
		go func() {
			done <- string(frame[:n])
			sh.DecRef(frame)
		}()
	}
	for range subscribers {
		fmt.Println(<-done)
	}
	fmt.Println("publisher's DecRef was the last:", sh.DecRef(frame))
	// Output:
	// frame 1
	// frame 1
	// frame 1
	// publisher's DecRef was the last: true
}
