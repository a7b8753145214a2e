package ringbuf_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/ringbuf"
	"github.com/memkit/memkit/slab"
)

// TestData is the seed's ring record, with its name as fixed-size text so
// that it holds no Go pointer.
type TestData struct {
	Name [16]byte
	ID   int64
}

// The seed's ring: ten slots, the oldest record overwritten when full, but
// every dropped record counted.
func Example() {
	rb, err := ringbuf.NewTyped[TestData](10, ringbuf.WithPolicy(ringbuf.Overwrite))
	if err != nil {
		panic(err)
	}
	for i := range 12 {
		var d TestData
		slab.SetString(d.Name[:], "test")
		d.ID = int64(i)
		rb.Write(d)
	}
	v, ok := rb.Read()
	fmt.Println(slab.GetString(v.Name[:]), v.ID, ok, "dropped:", rb.Ring().Dropped())
	// Output: test 2 true dropped: 2
}

func ExampleNew() {
	r, err := ringbuf.New(10, 64) // ten 64-byte slots, Reject when full
	if err != nil {
		panic(err)
	}
	r.Write([]byte("hello, ring"))
	p := make([]byte, r.SlotSize())
	n, ok := r.Read(p)
	fmt.Println(string(p[:n]), ok)

	fmt.Println(r.Write(make([]byte, 65)))
	_, err = ringbuf.New(0, 64)
	fmt.Println(err)
	// Output:
	// hello, ring true
	// memkit/ringbuf: record larger than a slot
	// memkit/ringbuf: slots 0 must be between 1 and 1073741824
}

// Under Reject a full ring refuses a write and leaves the ring as it was.
func ExampleReject() {
	r, _ := ringbuf.New(2, 8)
	fmt.Println(r.Write([]byte("a")), r.Write([]byte("b")), r.Write([]byte("c")))
	var s memkit.Stats
	r.ReadStats(&s)
	fmt.Println("live", s.LiveObjects, "failures", s.Failures)
	// Output:
	// <nil> <nil> memkit/ringbuf: ring is full
	// live 2 failures 1
}

// Under Block a writer waits for space until its context ends.
func ExampleBlock() {
	r, _ := ringbuf.New(1, 8, ringbuf.WithPolicy(ringbuf.Block))
	r.Write([]byte("first"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a context that has ended: the write gives up at once
	err := r.WriteContext(ctx, []byte("second"))
	fmt.Println(errors.Is(err, context.Canceled))
	// Output: true
}

// Reserve and Commit build a record in place; Peek and Release read it in
// place: no copy on either side.
func ExampleRing_Reserve() {
	r, _ := ringbuf.New(4, 32)
	s, err := r.Reserve(context.Background())
	if err != nil {
		panic(err)
	}
	n := copy(s.Bytes(), "built in place")
	r.Commit(s, n)

	got, ok := r.Peek()
	fmt.Println(string(got.Bytes()), ok)
	r.Release(got)
	// Output: built in place true
}
