package buffer_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/internal/memtest"
)

// The benchmarks of the targets, every call made directly on the
// concrete type. Compare implementations with
//
//	go test -run '^$' -bench . -count 6 ./buffer | benchstat -col /impl -
//
// memkit bench (cmd/memkit) runs the same workloads against
// valyala/bytebufferpool too, which the core module cannot import.

var sink int

// jsonInts is the seed's workload: a JSON array of the integers 0 to
// 19,999 (the seed wrote its loop counter j 20,000 times, a bug; every
// implementation here writes i).
const jsonInts = 20000

func BenchmarkJSON_Ints(b *testing.B) {
	b.Run("n=20000/impl=memkit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf := buffer.Get()
			j := buffer.NewJSON(buf)
			j.BeginArray()
			for i := range jsonInts {
				j.Int(int64(i))
			}
			j.EndArray()
			sink += len(buf.Bytes())
			buf.Free()
		}
	})
	b.Run("n=20000/impl=appendint", func(b *testing.B) {
		// bytebufferpool's way: strconv.AppendInt into a pooled slice.
		pool := sync.Pool{New: func() any { return new([]byte) }}
		b.ReportAllocs()
		for b.Loop() {
			bp := pool.Get().(*[]byte)
			out := append((*bp)[:0], '[')
			for i := range jsonInts {
				if i > 0 {
					out = append(out, ',')
				}
				out = strconv.AppendInt(out, int64(i), 10)
			}
			out = append(out, ']')
			sink += len(out)
			*bp = out
			pool.Put(bp)
		}
	})
	b.Run("n=20000/impl=viki-itoa", func(b *testing.B) {
		pool := newVikiPool(16, 128<<10)
		b.ReportAllocs()
		for b.Loop() {
			it := pool.checkout()
			it.beginArray()
			for i := range jsonInts {
				it.writeInt(i)
			}
			it.endArray()
			sink += len(it.bytes())
			it.close()
		}
	})
	b.Run("n=20000/impl=join", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			list := make([]string, jsonInts)
			for i := range list {
				list[i] = strconv.Itoa(i)
			}
			s := "[" + strings.Join(list, ",") + "]"
			sink += len(s)
		}
	})
	b.Run("n=20000/impl=encoding-json", func(b *testing.B) {
		ints := make([]int, jsonInts)
		for i := range ints {
			ints[i] = i
		}
		pool := sync.Pool{New: func() any { return new(bytes.Buffer) }}
		b.ReportAllocs()
		for b.Loop() {
			bb := pool.Get().(*bytes.Buffer)
			bb.Reset()
			json.NewEncoder(bb).Encode(ints)
			sink += bb.Len()
			pool.Put(bb)
		}
	})
}

// vikiPool rebuilds the algorithm of Viki's bytepool JSON writer, for
// comparison: a channel of fixed-size items, each number formatted by
// strconv.Itoa (a string allocated for every number from 100 up) and
// copied in, a comma after every value, the last comma trimmed at the end
// of the array. Written from its description, not its code.
type vikiPool struct {
	items chan *vikiItem
	size  int
}

type vikiItem struct {
	buf   []byte
	n     int
	depth int
	pool  *vikiPool
}

func newVikiPool(count, size int) *vikiPool {
	p := &vikiPool{items: make(chan *vikiItem, count), size: size}
	for range count {
		p.items <- &vikiItem{buf: make([]byte, size), pool: p}
	}
	return p
}

func (p *vikiPool) checkout() *vikiItem {
	select {
	case it := <-p.items:
		return it
	default:
		return &vikiItem{buf: make([]byte, p.size)}
	}
}

func (it *vikiItem) write(s string) {
	it.n += copy(it.buf[it.n:], s) // silently truncates when full, as the seed's
}

func (it *vikiItem) writeInt(v int) {
	it.write(strconv.Itoa(v))
	if it.depth > 0 {
		it.write(",")
	}
}

func (it *vikiItem) beginArray() {
	it.depth++
	it.write("[")
}

func (it *vikiItem) endArray() {
	it.depth--
	if it.n > 0 && it.buf[it.n-1] == ',' {
		it.n--
	}
	it.write("]")
}

func (it *vikiItem) bytes() []byte { return it.buf[:it.n] }

func (it *vikiItem) close() {
	it.n, it.depth = 0, 0
	if it.pool != nil {
		it.pool.items <- it
	}
}

func TestVikiBaseline_WritesTheSameJSON(t *testing.T) {
	it := newVikiPool(1, 128<<10).checkout()
	it.beginArray()
	b := buffer.Get()
	defer b.Free()
	j := buffer.NewJSON(b)
	j.BeginArray()
	for i := range jsonInts {
		it.writeInt(i)
		j.Int(int64(i))
	}
	it.endArray()
	j.EndArray()
	if !bytes.Equal(it.bytes(), b.Bytes()) || j.Err() != nil {
		t.Fatal("the baseline and the JSON writer differ")
	}
}

// chanPool is the channel-based pool Checkout+Close is compared with:
// Viki's, a buffered channel of buffers, a fresh one when it is empty.
type chanPool struct {
	ch   chan *[]byte
	size int
}

func newChanPool(count, size int) *chanPool {
	p := &chanPool{ch: make(chan *[]byte, count), size: size}
	for range count {
		b := make([]byte, 0, size)
		p.ch <- &b
	}
	return p
}

func (p *chanPool) checkout() *[]byte {
	select {
	case b := <-p.ch:
		return b
	default:
		b := make([]byte, 0, p.size)
		return &b
	}
}

func (p *chanPool) close(b *[]byte) {
	*b = (*b)[:0]
	select {
	case p.ch <- b:
	default:
	}
}

func BenchmarkFixedPool_CheckoutClose(b *testing.B) {
	const count, size = 64, 4 << 10
	b.Run("size=4KiB/impl=memkit", func(b *testing.B) {
		p := mustFixed(b, count, size)
		b.ReportAllocs()
		for b.Loop() {
			buf := p.Checkout()
			buf.WriteByte(1)
			buf.Close()
		}
	})
	b.Run("size=4KiB/impl=chan", func(b *testing.B) {
		p := newChanPool(count, size)
		b.ReportAllocs()
		for b.Loop() {
			buf := p.checkout()
			*buf = append(*buf, 1)
			p.close(buf)
		}
	})
	b.Run("size=4KiB/impl=syncpool", func(b *testing.B) { memtest.BenchSyncPool(b, size) })
}

func BenchmarkFixedPool_CheckoutCloseParallel(b *testing.B) {
	const count, size = 64, 4 << 10
	b.Run("size=4KiB/impl=memkit", func(b *testing.B) {
		p := mustFixed(b, count, size)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				buf := p.Checkout()
				buf.WriteByte(1)
				buf.Close()
			}
		})
	})
	b.Run("size=4KiB/impl=chan", func(b *testing.B) {
		p := newChanPool(count, size)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				buf := p.checkout()
				*buf = append(*buf, 1)
				p.close(buf)
			}
		})
	})
	b.Run("size=4KiB/impl=syncpool", func(b *testing.B) { memtest.BenchSyncPoolParallel(b, size) })
}

func BenchmarkPool_GetWriteFree(b *testing.B) {
	payload := make([]byte, 1000)
	b.Run("size=1000B/impl=memkit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf := buffer.Get()
			buf.Write(payload)
			buf.Free()
		}
	})
	b.Run("size=1000B/impl=syncpool", func(b *testing.B) {
		pool := sync.Pool{New: func() any { return new(bytes.Buffer) }}
		b.ReportAllocs()
		for b.Loop() {
			buf := pool.Get().(*bytes.Buffer)
			buf.Write(payload)
			buf.Reset()
			pool.Put(buf)
		}
	})
}

func BenchmarkPool_GetWriteFreeParallel(b *testing.B) {
	payload := make([]byte, 1000)
	b.Run("size=1000B/impl=memkit", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				buf := buffer.Get()
				buf.Write(payload)
				buf.Free()
			}
		})
	})
	b.Run("size=1000B/impl=syncpool", func(b *testing.B) {
		pool := sync.Pool{New: func() any { return new(bytes.Buffer) }}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				buf := pool.Get().(*bytes.Buffer)
				buf.Write(payload)
				buf.Reset()
				pool.Put(buf)
			}
		})
	})
}

// readerData is the Reader workloads' input: 64 KiB in 1 KiB segments,
// and the same bytes flat for bytes.Reader. For LEB128 the bytes are
// LEB128 numbers of one to three bytes (half, three in ten, one in five).
type readerData struct {
	s    buffer.Slice
	flat []byte
}

func newReaderData(leb bool) *readerData {
	const total, seg = 64 << 10, 1 << 10
	flat := make([]byte, 0, total)
	r := rand.New(rand.NewPCG(5, 6))
	if leb {
		for len(flat) < total-3 {
			var v uint64
			switch x := r.IntN(10); {
			case x < 5:
				v = r.Uint64N(1 << 7)
			case x < 8:
				v = 1<<7 + r.Uint64N(1<<14-1<<7)
			default:
				v = 1<<14 + r.Uint64N(1<<21-1<<14)
			}
			flat = binary.AppendUvarint(flat, v)
		}
		for len(flat) < total {
			flat = append(flat, 0)
		}
	} else {
		for range total {
			flat = append(flat, byte(r.Uint32()))
		}
	}
	d := &readerData{flat: flat}
	for i := 0; i < total; i += seg {
		d.s.PushOne(flat[i : i+seg : i+seg])
	}
	return d
}

// leb128Bytes is LEB128 on a bytes.Reader, by the same rule as
// buffer.Reader.LEB128, with the concrete (inlined) ReadByte.
func leb128Bytes(r *bytes.Reader) (uint64, int, error) {
	var v uint64
	for i := 0; i < 8; i++ {
		c, err := r.ReadByte()
		if err != nil {
			return 0, 0, err
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return v, 8, nil
}

// The Reader benchmarks make one call per op; a Reader that has too few
// bytes left starts again from the front, the same check for both.
func BenchmarkReader(b *testing.B) {
	d := newReaderData(false)
	ld := newReaderData(true)
	b.Run("ReadByte/seg=1KiB/impl=memkit", func(b *testing.B) {
		r := d.s.NewReader()
		b.ReportAllocs()
		for b.Loop() {
			c, err := r.ReadByte()
			if err != nil {
				r = d.s.NewReader()
			}
			sink += int(c)
		}
	})
	b.Run("ReadByte/seg=1KiB/impl=bytes-reader", func(b *testing.B) {
		r := bytes.NewReader(d.flat)
		b.ReportAllocs()
		for b.Loop() {
			c, err := r.ReadByte()
			if err != nil {
				r.Reset(d.flat)
			}
			sink += int(c)
		}
	})
	b.Run("Uint32BE/seg=1KiB/impl=memkit", func(b *testing.B) {
		r := d.s.NewReader()
		b.ReportAllocs()
		for b.Loop() {
			v, err := r.Uint32BE()
			if err != nil {
				r = d.s.NewReader()
			}
			sink += int(v)
		}
	})
	b.Run("Uint32BE/seg=1KiB/impl=bytes-reader", func(b *testing.B) {
		r := bytes.NewReader(d.flat)
		var a [4]byte
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Read(a[:]); err != nil {
				r.Reset(d.flat)
			}
			sink += int(binary.BigEndian.Uint32(a[:]))
		}
	})
	b.Run("LEB128/seg=1KiB/impl=memkit", func(b *testing.B) {
		r := ld.s.NewReader()
		b.ReportAllocs()
		for b.Loop() {
			v, _, err := r.LEB128()
			if err != nil || r.Remaining() < 3 {
				r = ld.s.NewReader()
			}
			sink += int(v)
		}
	})
	b.Run("LEB128/seg=1KiB/impl=bytes-reader", func(b *testing.B) {
		r := bytes.NewReader(ld.flat)
		b.ReportAllocs()
		for b.Loop() {
			v, _, err := leb128Bytes(r)
			if err != nil || r.Len() < 3 {
				r.Reset(ld.flat)
			}
			sink += int(v)
		}
	})
	b.Run("ReadBytes16/seg=1KiB/impl=memkit", func(b *testing.B) {
		r := d.s.NewReader()
		b.ReportAllocs()
		for b.Loop() {
			p, err := r.ReadBytes(16)
			if err != nil {
				r = d.s.NewReader()
			}
			sink += len(p)
		}
	})
	b.Run("ReadBytes16/seg=1KiB/impl=bytes-reader", func(b *testing.B) {
		r := bytes.NewReader(d.flat)
		var p [16]byte
		b.ReportAllocs()
		for b.Loop() {
			n, err := r.Read(p[:])
			if err != nil {
				r.Reset(d.flat)
			}
			sink += n
		}
	})
	b.Run("Skip16/seg=1KiB/impl=memkit", func(b *testing.B) {
		r := d.s.NewReader()
		b.ReportAllocs()
		for b.Loop() {
			if r.Skip(16) != nil {
				r = d.s.NewReader()
			}
		}
		sink += r.Offset()
	})
	b.Run("Skip16/seg=1KiB/impl=bytes-reader", func(b *testing.B) {
		r := bytes.NewReader(d.flat)
		b.ReportAllocs()
		for b.Loop() {
			if r.Len() < 16 {
				r.Reset(d.flat)
			}
			r.Seek(16, io.SeekCurrent)
		}
		sink += r.Len()
	})
}
