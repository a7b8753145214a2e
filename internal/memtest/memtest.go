// Package memtest is the model-based test harness shared by memkit's
// allocator tests and fuzz targets.
//
// A [Model] records the blocks an allocator has handed out, fills each with a
// pattern derived from its own identity, and checks the properties every
// memkit allocator must keep: no two live blocks overlap, and every byte
// written to a live block reads back unchanged until the block is freed.
// [Ops] decodes fuzz input into a stream of small operations.
package memtest

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// Block is one live allocation in a [Model].
type Block struct {
	Buf  []byte // the slice as the allocator returned it
	Seed uint64 // pattern seed written into Buf
}

// Model tracks live blocks. It is not safe for concurrent use: give each
// goroutine its own and merge them with [CheckDisjoint].
type Model struct {
	Live []Block
	next uint64
	tag  uint64
}

// NewModel returns a model whose patterns are distinct from those of models
// with another tag (use the goroutine's index).
func NewModel(tag int) *Model { return &Model{tag: uint64(tag) << 40} }

// Add records b as live, fills it with a fresh pattern and returns its index.
// It fails if b overlaps a block already live in this model.
func (m *Model) Add(b []byte) (int, error) {
	for i := range m.Live {
		if Overlap(m.Live[i].Buf, b) {
			return 0, fmt.Errorf("memtest: new block [%#x, +%d) overlaps live block %d [%#x, +%d)",
				addr(b), cap(b), i, addr(m.Live[i].Buf), cap(m.Live[i].Buf))
		}
	}
	m.next++
	seed := m.tag | m.next
	Fill(b, seed)
	m.Live = append(m.Live, Block{Buf: b, Seed: seed})
	return len(m.Live) - 1, nil
}

// Remove verifies block i, forgets it and returns its buffer. The last block
// takes index i.
func (m *Model) Remove(i int) ([]byte, error) {
	blk := m.Live[i]
	if err := Verify(blk.Buf, blk.Seed); err != nil {
		return nil, err
	}
	last := len(m.Live) - 1
	m.Live[i] = m.Live[last]
	m.Live[last] = Block{}
	m.Live = m.Live[:last]
	return blk.Buf, nil
}

// VerifyAll checks the pattern of every live block.
func (m *Model) VerifyAll() error {
	for i := range m.Live {
		if err := Verify(m.Live[i].Buf, m.Live[i].Seed); err != nil {
			return fmt.Errorf("block %d: %w", i, err)
		}
	}
	return nil
}

// Fill writes the pattern of seed over b[:len(b)], a word at a time.
func Fill(b []byte, seed uint64) {
	x := seed*0x9E3779B97F4A7C15 | 1
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x = next(x)
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	for x = next(x); i < len(b); i++ {
		b[i] = byte(x >> (8 * (i & 7)))
	}
}

// Verify checks that b[:len(b)] still holds the pattern of seed.
func Verify(b []byte, seed uint64) error {
	x := seed*0x9E3779B97F4A7C15 | 1
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x = next(x)
		if got := binary.LittleEndian.Uint64(b[i:]); got != x {
			return changed(b, i, got, x)
		}
	}
	for x = next(x); i < len(b); i++ {
		if want := byte(x >> (8 * (i & 7))); b[i] != want {
			return changed(b, i, uint64(b[i]), uint64(want))
		}
	}
	return nil
}

func next(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

func changed(b []byte, i int, got, want uint64) error {
	return fmt.Errorf("memtest: bytes from %d of block [%#x, +%d) changed while live: got %#x, want %#x",
		i, addr(b), len(b), got, want)
}

// Overlap reports whether the memory up to the capacities of a and b
// overlaps. Empty-capacity slices overlap nothing.
func Overlap(a, b []byte) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	a0, b0 := addr(a), addr(b)
	return a0 < b0+uintptr(cap(b)) && b0 < a0+uintptr(cap(a))
}

// CheckDisjoint fails if any two blocks of the models overlap, up to their
// capacities. It sorts by address, so it is O(n log n).
func CheckDisjoint(models ...*Model) error {
	var all [][]byte
	for _, m := range models {
		for _, blk := range m.Live {
			if cap(blk.Buf) > 0 {
				all = append(all, blk.Buf)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return addr(all[i]) < addr(all[j]) })
	for i := 1; i < len(all); i++ {
		if Overlap(all[i-1], all[i]) {
			return fmt.Errorf("memtest: live blocks [%#x, +%d) and [%#x, +%d) overlap",
				addr(all[i-1]), cap(all[i-1]), addr(all[i]), cap(all[i]))
		}
	}
	return nil
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)]))) }

// Ops reads fuzz input as a stream of small operations.
type Ops struct {
	data []byte
}

// NewOps returns a reader over data.
func NewOps(data []byte) *Ops { return &Ops{data: data} }

// More reports whether any input is left.
func (o *Ops) More() bool { return len(o.data) > 0 }

// Byte returns the next byte, or 0 when the input is used up.
func (o *Ops) Byte() byte {
	if len(o.data) == 0 {
		return 0
	}
	b := o.data[0]
	o.data = o.data[1:]
	return b
}

// Uint16 returns the next two bytes as a little-endian number.
func (o *Ops) Uint16() int { return int(o.Byte()) | int(o.Byte())<<8 }

// Split divides the remaining input into n streams, round-robin by chunks of
// chunk bytes, so that each goroutine of a concurrent fuzz target gets its
// own operations.
func (o *Ops) Split(n, chunk int) []*Ops {
	out := make([]*Ops, n)
	for i := range out {
		out[i] = &Ops{}
	}
	for i := 0; len(o.data) > 0; i++ {
		k := min(chunk, len(o.data))
		out[i%n].data = append(out[i%n].data, o.data[:k]...)
		o.data = o.data[k:]
	}
	return out
}

// PanicOf runs f and returns what it panicked with, formatted by fmt.Sprint,
// or "" if it returned normally.
func PanicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// CheckPanic fails the test unless f panics with exactly want (as
// fmt.Sprint formats the panic value): memkit's misuse panics are part of
// its API, so tests pin their text.
func CheckPanic(t testing.TB, want string, f func()) {
	t.Helper()
	switch got := PanicOf(f); {
	case got == "":
		t.Fatalf("no panic; want %q", want)
	case got != want:
		t.Fatalf("panic %q; want %q", got, want)
	}
}

// Returns fails the test if f does not return within a minute: for code
// that deadlocks rather than fails (a callback that takes a lock its caller
// holds spins forever). f runs on its own goroutine; a panic in it is
// reported as a failure. The minute is a bound on a hang, not a speed
// requirement: f is expected to take microseconds.
func Returns(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Sprint("panicked: ", r)
				return
			}
			done <- ""
		}()
		f()
	}()
	select {
	case msg := <-done:
		if msg != "" {
			t.Fatalf("%s %s", what, msg)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return (a deadlock: a callback waiting for a lock its caller holds?)", what)
	}
}

// BenchSyncPool is the baseline every allocator's benchmarks compare with:
// Get and Put of an n-byte buffer through a sync.Pool of *[]byte (a pointer,
// so Put does not allocate), touching one byte in between, as the
// allocators' own loops do.
func BenchSyncPool(b *testing.B, n int) {
	sp := sync.Pool{New: func() any { s := make([]byte, n); return &s }}
	b.ReportAllocs()
	for b.Loop() {
		bp := sp.Get().(*[]byte)
		(*bp)[0] = 1
		sp.Put(bp)
	}
}

// BenchSyncPoolParallel is BenchSyncPool under b.RunParallel.
func BenchSyncPoolParallel(b *testing.B, n int) {
	sp := sync.Pool{New: func() any { s := make([]byte, n); return &s }}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bp := sp.Get().(*[]byte)
			(*bp)[0] = 1
			sp.Put(bp)
		}
	})
}
