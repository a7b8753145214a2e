package main

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
	"unsafe"

	"github.com/valyala/bytebufferpool"

	"github.com/memkit/memkit/buffer"
)

// This file is the buffer family (issue 5): the JSON writer against the
// ways the seed and its readers build a JSON array, FixedPool's Checkout
// and Close against a channel-based pool, pooled Buffers against
// bytebufferpool, and the multi-segment Reader against bytes.Reader on a
// flat copy of the same bytes. Every call is made on the concrete type.

// jsonInts is BufferJSON's size: the seed's array of 20,000 integers. The
// seed's loop wrote its counter j 20,000 times (a bug); every impl here
// writes 0 to 19,999, the same 108,891 bytes (bufferJSONImpls' test checks).
const jsonInts = 20000

// vikiItemSize is the fixed size of the Viki baseline's items: the array
// fits.
const vikiItemSize = 128 << 10

// fixedCount and fixedSize are the shape of the Checkout workloads' pools.
const fixedCount, fixedSize = 64, 4 << 10

// readerTotal and readerSeg are the Reader workloads' input: 64 KiB in
// 1 KiB segments.
const readerTotal, readerSeg = 64 << 10, 1 << 10

// sink keeps results alive: workloads add to it so the compiler cannot
// drop the reads they measure. Nothing reads it.
//
//lint:ignore U1000 written by every Reader workload, read by none, on purpose
var sink int

// jsonImpl builds the array once into a buffer it hands to use, which must
// not keep it.
type jsonImpl struct {
	name string
	new  func() func(use func([]byte))
}

// bufferJSONImpls are the BufferJSON implementations. Each new() sets up
// what a long-lived program would (a pool) and returns one op.
var bufferJSONImpls = []jsonImpl{
	{"memkit", func() func(func([]byte)) {
		return func(use func([]byte)) {
			b := buffer.Get()
			j := buffer.NewJSON(b)
			j.BeginArray()
			for i := range jsonInts {
				j.Int(int64(i))
			}
			j.EndArray()
			use(b.Bytes())
			b.Free()
		}
	}},
	{"viki-itoa", func() func(func([]byte)) {
		p := newVikiPool(16, vikiItemSize)
		return func(use func([]byte)) {
			it := p.checkout()
			it.beginArray()
			for i := range jsonInts {
				it.writeInt(i)
			}
			it.endArray()
			use(it.bytes())
			it.close()
		}
	}},
	{"strings-join", func() func(func([]byte)) {
		// The seed's "array join": a string per number, joined.
		return func(use func([]byte)) {
			list := make([]string, jsonInts)
			for i := range list {
				list[i] = strconv.Itoa(i)
			}
			s := "[" + strings.Join(list, ",") + "]"
			use(unsafe.Slice(unsafe.StringData(s), len(s))) // a view, not a copy

		}
	}},
	{"bytebufferpool", func() func(func([]byte)) {
		var p bytebufferpool.Pool
		return func(use func([]byte)) {
			bb := p.Get()
			bb.B = append(bb.B[:0], '[')
			for i := range jsonInts {
				if i > 0 {
					bb.B = append(bb.B, ',')
				}
				bb.B = strconv.AppendInt(bb.B, int64(i), 10)
			}
			bb.B = append(bb.B, ']')
			use(bb.B)
			p.Put(bb)
		}
	}},
	{"encoding-json", func() func(func([]byte)) {
		ints := make([]int, jsonInts)
		for i := range ints {
			ints[i] = i
		}
		var p bytebufferpool.Pool
		return func(use func([]byte)) {
			bb := p.Get()
			bb.Reset()
			json.NewEncoder(bb).Encode(ints)
			use(bytes.TrimSuffix(bb.B, []byte("\n")))
			p.Put(bb)
		}
	}},
}

// useLen is the use of BufferJSON's output: its length, into sink. (The
// seed passed it to fmt.Sprintf, which costs a copy for every impl.)
func useLen(b []byte) { sink += len(b) }

func bufferJSON(b *testing.B, im jsonImpl) {
	op := im.new()
	op(useLen) // warm: pools, calibration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		op(useLen)
	}
}

// vikiPool rebuilds the algorithm of Viki's bytepool JSON writer, the
// seed's: a channel of fixed-size items, every number formatted by
// strconv.Itoa (a string allocated for each from 100 up) and copied in with
// a comma after it, the last comma trimmed at the end of the array.
// Written from the seed's description, not its code.
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

// checkout takes an item, or makes one the pool will not keep.
func (p *vikiPool) checkout() *vikiItem {
	select {
	case it := <-p.items:
		return it
	default:
		return &vikiItem{buf: make([]byte, p.size)}
	}
}

// write copies what fits: the seed's items truncate silently when full.
func (it *vikiItem) write(s string) { it.n += copy(it.buf[it.n:], s) }

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

// close returns the item (blocking if the channel is full, as the seed's).
func (it *vikiItem) close() {
	it.n, it.depth = 0, 0
	if it.pool != nil {
		it.pool.items <- it
	}
}

// chanPool is the channel-based pool of the Checkout workloads: a buffered
// channel of count buffers, a fresh buffer when it is empty (a miss), and a
// Close that drops the buffer when the channel is full.
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

// fixedCheckout is BufferCheckout: Checkout, write a byte, Close.
func fixedCheckout(b *testing.B) { fixedCheckoutOf(b, fixedCount) }

// fixedCheckoutOf is fixedCheckout from a pool of count buffers.
func fixedCheckoutOf(b *testing.B, count int) {
	p := must(buffer.NewFixedPool(count, fixedSize))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf := p.Checkout()
		buf.WriteByte(1)
		buf.Close()
	}
}

func chanCheckout(b *testing.B) {
	p := newChanPool(fixedCount, fixedSize)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf := p.checkout()
		*buf = append(*buf, 1)
		p.close(buf)
	}
}

func fixedCheckoutParallel(b *testing.B) { fixedCheckoutParallelOf(b, fixedCount) }

func fixedCheckoutParallelOf(b *testing.B, count int) {
	p := must(buffer.NewFixedPool(count, fixedSize))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			buf := p.Checkout()
			buf.WriteByte(1)
			buf.Close()
		}
	})
}

func chanCheckoutParallel(b *testing.B) {
	p := newChanPool(fixedCount, fixedSize)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			buf := p.checkout()
			*buf = append(*buf, 1)
			p.close(buf)
		}
	})
}

// syncPoolCheckout is the BufferCheckout peer the issue-23 target names:
// a sync.Pool of *bytes.Buffer, Get, write a byte, Reset, Put.
func syncPoolCheckout(b *testing.B) {
	p := sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, fixedSize)) }}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		bb := p.Get().(*bytes.Buffer)
		bb.WriteByte(1)
		bb.Reset()
		p.Put(bb)
	}
}

func syncPoolCheckoutParallel(b *testing.B) {
	p := sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, fixedSize)) }}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bb := p.Get().(*bytes.Buffer)
			bb.WriteByte(1)
			bb.Reset()
			p.Put(bb)
		}
	})
}

// bufferPayload is what BufferGetWriteFree writes into each buffer.
var bufferPayload = make([]byte, 1000)

// bufferGetWriteFree is BufferGetWriteFree: a pooled growable buffer, 1000
// bytes written, given back.
func bufferGetWriteFree(b *testing.B) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf := buffer.Get()
		buf.Write(bufferPayload)
		buf.Free()
	}
}

func bbpGetWriteFree(b *testing.B) {
	var p bytebufferpool.Pool
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		bb := p.Get()
		bb.Write(bufferPayload)
		p.Put(bb)
	}
}

func syncPoolBytesBuffer(b *testing.B) {
	p := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		bb := p.Get().(*bytes.Buffer)
		bb.Write(bufferPayload)
		bb.Reset()
		p.Put(bb)
	}
}

// readerInput is the Reader workloads' input, made on first use: random
// bytes, and LEB128 numbers of one to three bytes (half, three in ten, one
// in five), each as a Slice of 1 KiB segments and as the flat bytes.
var readerInput = sync.OnceValue(func() (in struct {
	s, leb       buffer.Slice
	flat, lebRaw []byte
}) {
	r := rand.New(rand.NewPCG(5, 6))
	in.flat = make([]byte, readerTotal)
	for i := range in.flat {
		in.flat[i] = byte(r.Uint32())
	}
	for len(in.lebRaw) < readerTotal-3 {
		var v uint64
		switch x := r.IntN(10); {
		case x < 5:
			v = r.Uint64N(1 << 7)
		case x < 8:
			v = 1<<7 + r.Uint64N(1<<14-1<<7)
		default:
			v = 1<<14 + r.Uint64N(1<<21-1<<14)
		}
		in.lebRaw = binary.AppendUvarint(in.lebRaw, v)
	}
	for len(in.lebRaw) < readerTotal {
		in.lebRaw = append(in.lebRaw, 0)
	}
	for i := 0; i < readerTotal; i += readerSeg {
		in.s.PushOne(in.flat[i : i+readerSeg : i+readerSeg])
		in.leb.PushOne(in.lebRaw[i : i+readerSeg : i+readerSeg])
	}
	return in
})

// The Reader workloads make one call per op; a reader with too few bytes
// left starts again from the front, the same check for both impls.

func readerReadByte(b *testing.B) {
	in := readerInput()
	r := in.s.NewReader()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := r.ReadByte()
		if err != nil {
			r = in.s.NewReader()
		}
		sink += int(c)
	}
}

func bytesReadByte(b *testing.B) {
	in := readerInput()
	r := bytes.NewReader(in.flat)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := r.ReadByte()
		if err != nil {
			r.Reset(in.flat)
		}
		sink += int(c)
	}
}

func readerUint32BE(b *testing.B) {
	in := readerInput()
	r := in.s.NewReader()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		v, err := r.Uint32BE()
		if err != nil {
			r = in.s.NewReader()
		}
		sink += int(v)
	}
}

// bytesUint32BE reads four bytes with the concrete Read and decodes them.
func bytesUint32BE(b *testing.B) {
	in := readerInput()
	r := bytes.NewReader(in.flat)
	var a [4]byte
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := r.Read(a[:]); err != nil {
			r.Reset(in.flat)
		}
		sink += int(binary.BigEndian.Uint32(a[:]))
	}
}

func readerLEB128(b *testing.B) {
	in := readerInput()
	r := in.leb.NewReader()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		v, _, err := r.LEB128()
		if err != nil || r.Remaining() < 3 {
			r = in.leb.NewReader()
		}
		sink += int(v)
	}
}

// bytesLEB128 decodes by buffer.Reader.LEB128's rule with the concrete,
// inlined ReadByte of bytes.Reader.
func bytesLEB128(b *testing.B) {
	in := readerInput()
	r := bytes.NewReader(in.lebRaw)
	leb := func() (uint64, error) {
		var v uint64
		for i := 0; i < 8; i++ {
			c, err := r.ReadByte()
			if err != nil {
				return 0, err
			}
			v |= uint64(c&0x7f) << (7 * i)
			if c < 0x80 {
				break
			}
		}
		return v, nil
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		v, err := leb()
		if err != nil || r.Len() < 3 {
			r.Reset(in.lebRaw)
		}
		sink += int(v)
	}
}

func readerReadBytes16(b *testing.B) {
	in := readerInput()
	r := in.s.NewReader()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p, err := r.ReadBytes(16)
		if err != nil {
			r = in.s.NewReader()
		}
		sink += len(p)
	}
}

// bytesReadBytes16 copies 16 bytes out: bytes.Reader has no view.
func bytesReadBytes16(b *testing.B) {
	in := readerInput()
	r := bytes.NewReader(in.flat)
	var p [16]byte
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n, err := r.Read(p[:])
		if err != nil {
			r.Reset(in.flat)
		}
		sink += n
	}
}

func readerSkip16(b *testing.B) {
	in := readerInput()
	r := in.s.NewReader()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if r.Skip(16) != nil {
			r = in.s.NewReader()
		}
	}
	sink += r.Offset()
}

func bytesSkip16(b *testing.B) {
	in := readerInput()
	r := bytes.NewReader(in.flat)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if r.Len() < 16 {
			r.Reset(in.flat)
		}
		r.Seek(16, io.SeekCurrent)
	}
	sink += r.Len()
}

func init() {
	for _, im := range bufferJSONImpls {
		register(bench{workload: "BufferJSON/ints=20000", impl: im.name,
			run: func(b *testing.B) { bufferJSON(b, im) }})
	}
	w := "BufferCheckout/size=" + sizeName(fixedSize)
	register(
		bench{workload: w, impl: "memkit", run: fixedCheckout},
		bench{workload: w, impl: "chan", run: chanCheckout},
		bench{workload: w, impl: "syncpool", run: syncPoolCheckout},
	)
	w = "BufferCheckoutParallel/size=" + sizeName(fixedSize)
	register(
		bench{workload: w, impl: "memkit", run: fixedCheckoutParallel},
		bench{workload: w, impl: "chan", run: chanCheckoutParallel},
		bench{workload: w, impl: "syncpool", run: syncPoolCheckoutParallel},
	)
	// The pool's size against its scaling: 16 buffers (one shard word),
	// 1024 (64); the rows above are 64.
	for _, count := range []int{16, 1024} {
		shape := "/buffers=" + strconv.Itoa(count) + "/size=" + sizeName(fixedSize)
		register(
			bench{workload: "BufferCheckout" + shape, impl: "memkit", run: func(b *testing.B) { fixedCheckoutOf(b, count) }},
			bench{workload: "BufferCheckoutParallel" + shape, impl: "memkit", run: func(b *testing.B) { fixedCheckoutParallelOf(b, count) }},
		)
	}
	w = "BufferGetWriteFree/size=1000B"
	register(
		bench{workload: w, impl: "memkit", rounds: noisyRounds, run: bufferGetWriteFree},
		bench{workload: w, impl: "bytebufferpool", rounds: noisyRounds, run: bbpGetWriteFree},
		bench{workload: w, impl: "syncpool", rounds: noisyRounds, run: syncPoolBytesBuffer},
	)
	for _, rw := range []struct {
		op             string
		memkit, bytesR func(*testing.B)
	}{
		{"ReadByte", readerReadByte, bytesReadByte},
		{"Uint32BE", readerUint32BE, bytesUint32BE},
		{"LEB128", readerLEB128, bytesLEB128},
		{"ReadBytes16", readerReadBytes16, bytesReadBytes16},
		{"Skip16", readerSkip16, bytesSkip16},
	} {
		w := "BufferReader/op=" + rw.op + "/seg=" + sizeName(readerSeg)
		register(
			bench{workload: w, impl: "memkit", run: rw.memkit},
			bench{workload: w, impl: "bytes-reader", run: rw.bytesR},
		)
	}
}
