package buffer_test

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
)

// A Buffer from Get takes its storage from bytepool on the first write and
// gives it back on Free.
func Example() {
	b := buffer.Get()
	b.WriteString("id=")
	b.AppendInt(42, 10)
	b.WriteByte(' ')
	b.AppendQuote("memkit")
	fmt.Println(b.String(), b.Len())
	b.Free() // b must not be used after this
	// Output: id=42 "memkit" 14
}

func ExampleNewPool() {
	p, err := buffer.NewPool(buffer.WithDefaultSize(4096))
	if err != nil {
		panic(err)
	}
	b := p.Get()
	b.WriteString("hello")
	fmt.Println(b.Len(), b.Cap())
	b.Free()

	var st memkit.Stats
	p.ReadStats(&st)
	fmt.Println("storage taken", st.Allocs, "given back", st.Frees)

	_, err = buffer.NewPool(buffer.WithDefaultSize(0))
	fmt.Println(err)
	// Output:
	// 5 4096
	// storage taken 1 given back 1
	// memkit/buffer: DefaultSize 0 must be between 1 and 1048576
}

// A FixedPool reserves its buffers up front. When they are all out,
// Checkout still returns at once, with a buffer the pool does not keep.
func ExampleNewFixedPool() {
	pool, err := buffer.NewFixedPool(2, 1024)
	if err != nil {
		panic(err)
	}
	a, b := pool.Checkout(), pool.Checkout()
	c := pool.Checkout() // the pool is empty: a miss
	fmt.Println("idle", pool.Len(), "misses", pool.Misses())
	for _, x := range []*buffer.Buffer{a, b, c} {
		x.Close()
	}
	fmt.Println("idle", pool.Len())
	fmt.Println("second Close:", a.Close())
	// Output:
	// idle 0 misses 1
	// idle 2
	// second Close: memkit/buffer: Buffer already closed
}

// The seed's use: read a request body into a pooled buffer. Pair ReadFrom
// with http.MaxBytesReader at the pool's size, so that a client cannot make
// the server read (or the buffer grow) without bound: a body of exactly the
// size fits without expanding, a larger one fails with
// *http.MaxBytesError.
func ExampleBuffer_ReadFrom() {
	const size = 16
	pool, err := buffer.NewFixedPool(8, size)
	if err != nil {
		panic(err)
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		b := pool.Checkout()
		defer b.Close()
		if _, err := b.ReadFrom(http.MaxBytesReader(w, r.Body, size)); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "body over 16 bytes", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "got %q", b.Bytes())
	}
	for _, body := range []string{"hello", "exactly 16 bytes", "seventeen bytes!!"} {
		rec := httptest.NewRecorder()
		handler(rec, httptest.NewRequest("POST", "/", strings.NewReader(body)))
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	fmt.Println("expansions", pool.Expansions())
	// Output:
	// 200 got "hello"
	// 200 got "exactly 16 bytes"
	// 413 body over 16 bytes
	// expansions 0
}

// Under the Strict policy a buffer never passes the pool's size: a write
// that would is refused whole.
func ExampleWithOverflow() {
	pool, err := buffer.NewFixedPool(1, 8, buffer.WithOverflow(buffer.Strict))
	if err != nil {
		panic(err)
	}
	b := pool.Checkout()
	defer b.Close()
	b.WriteString("12345")
	n, err := b.WriteString("6789")
	fmt.Println(n, err, b.String())
	// Output: 0 short write 12345
}

func ExampleNewJSON() {
	b := buffer.Get()
	defer b.Free()
	j := buffer.NewJSON(b)
	j.BeginObject()
	j.Key("name")
	j.String("<memkit>")
	j.Key("sizes")
	j.BeginArray()
	j.Int(64)
	j.Int(4096)
	j.EndArray()
	j.Key("ratio")
	j.Float(0.25)
	j.Key("at")
	j.Time(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC))
	j.Key("ok")
	j.Bool(true)
	j.EndObject()
	if err := j.Err(); err != nil {
		panic(err)
	}
	fmt.Println(b.String())
	// Output: {"name":"\u003cmemkit\u003e","sizes":[64,4096],"ratio":0.25,"at":"2024-05-06T07:08:09Z","ok":true}
}

// A call that would make the output invalid records an error instead, and
// the writer ignores every call after it.
func ExampleJSON_Err() {
	b := buffer.Get()
	defer b.Free()
	j := buffer.NewJSON(b)
	j.BeginArray()
	j.Float(math.NaN())
	j.EndArray()
	fmt.Println(j.Err())

	b.Reset()
	j = buffer.NewJSON(b)
	j.BeginArray()
	j.Key("k")
	fmt.Println(j.Err(), errors.Is(j.Err(), buffer.ErrJSON))
	// Output:
	// memkit/buffer: JSON cannot represent NaN or infinity
	// memkit/buffer: JSON: Key outside an object true
}

func ExampleNewSlice() {
	s := buffer.NewSlice([]byte("hello, "), []byte("multi-"))
	s.PushOne([]byte("segment world\n"))
	fmt.Println(s.Count(), s.Len())
	s.WriteTo(os.Stdout) // one Write per segment; writev on a TCP connection
	// Output:
	// 3 27
	// hello, multi-segment world
}

// A Reader parses a stream cut into segments anywhere, without copying
// what lies in one segment and without allocating.
func ExampleReader() {
	// A record: a 2-byte big-endian type, a LEB128 length, the payload.
	s := buffer.NewSlice([]byte{0x00}, []byte{0x07, 0x05, 'h', 'e'}, []byte("llo"))
	r := s.NewReader()
	typ, _ := r.Uint16BE()
	n, _, _ := r.LEB128()
	payload, _ := r.ReadBytes(int(n))
	fmt.Println(typ, n, string(payload), r.Remaining())
	_, err := r.ReadByte()
	fmt.Println(err)
	// Output:
	// 7 5 hello 0
	// EOF
}

// ClipFront drops what was read from the Slice; owned segments go back to
// bytepool.
func ExampleReader_ClipFront() {
	var s buffer.Slice
	seg := bytepool.Get(5)
	copy(seg, "first")
	s.PushOwned(seg)
	s.PushOne([]byte("second"))
	r := s.NewReader()
	r.Skip(7) // "first" and "se"
	r.ClipFront(nil)
	rest, _ := io.ReadAll(&r)
	fmt.Println(s.Count(), string(rest))
	// Output: 1 cond
}
