package arena_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memkit/memkit/arena"
)

// holder is an arena object that holds the only reference to heap objects,
// through every kind of Go pointer.
type holder struct {
	p    *[64]byte
	s    string
	b    []byte
	i    any
	m    map[int]int
	next *holder
	n    int64
}

// gcSink makes the heap churn of TestGCSafety escape.
var gcSink []byte

// gcTargets is the number of heap objects each GC-safety case watches.
const gcTargets = 500

// newTarget returns a fresh heap object filled from i, whose collection
// increments collected.
func newTarget(i int, collected *atomic.Int64) *[64]byte {
	p := new([64]byte)
	for j := range p {
		p[j] = byte(i + j)
	}
	runtime.AddCleanup(p, func(c *atomic.Int64) { c.Add(1) }, collected)
	return p
}

// fill points h at fresh heap objects built from i.
func fill(h *holder, i int, collected *atomic.Int64) {
	h.p = newTarget(i, collected)
	h.s = strings.Repeat(string(rune('a'+i%26)), 40+i%7)
	h.b = []byte(fmt.Sprint("bytes ", i))
	h.i = &[2]int{i, -i}
	h.m = map[int]int{i: i * i}
	h.n = int64(i)
}

func check(t *testing.T, h *holder, i int) {
	t.Helper()
	for j := range h.p {
		if h.p[j] != byte(i+j) {
			t.Fatalf("holder %d: pointed-to bytes changed", i)
		}
	}
	if h.s != strings.Repeat(string(rune('a'+i%26)), 40+i%7) || string(h.b) != fmt.Sprint("bytes ", i) ||
		*h.i.(*[2]int) != [2]int{i, -i} || h.m[i] != i*i || h.n != int64(i) {
		t.Fatalf("holder %d changed: %q %q %v %v %d", i, h.s, h.b, h.i, h.m, h.n)
	}
}

// collectUntil runs the GC until control targets are collected, which
// shows that the watchers work and that the GC ran its cleanups, then
// some more cycles.
func collectUntil(t *testing.T, control *atomic.Int64, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for control.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d unreferenced targets collected in 10s", control.Load(), want)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		runtime.GC()
	}
	time.Sleep(5 * time.Millisecond)
}

// TestGCSafety stores in arena objects the only references to fresh heap
// objects (through pointers, strings, slices, interfaces, maps), drops
// every other reference, forces several GC cycles, and checks that no
// target was collected while its arena lives and that every target's
// content is intact; then that Reset releases them. A control group of
// unreferenced targets shows that collection is observed.
func TestGCSafety(t *testing.T) {
	cases := []struct {
		name  string
		alloc func() (get func(i int) *holder, reset func())
	}{
		{"impl=arena-New", func() (func(int) *holder, func()) {
			a := arena.NewArena(arena.WithChunkSize(4 << 10))
			hs := make([]*holder, gcTargets)
			return func(i int) *holder {
				if hs[i] == nil {
					hs[i] = arena.New[holder](a)
				}
				return hs[i]
			}, a.Reset
		}},
		{"impl=arena-MakeSlice", func() (func(int) *holder, func()) {
			a := arena.NewArena(arena.WithChunkSize(4 << 10))
			var s []holder
			for range gcTargets / 10 {
				s = arena.Append(a, s, make([]holder, 10)...)
			}
			return func(i int) *holder { return &s[i] }, a.Reset
		}},
		{"impl=arena-Append-ptrs", func() (func(int) *holder, func()) {
			a := arena.NewArena(arena.WithChunkSize(1 << 10))
			var s []*holder // a slice of pointers, grown in the arena
			for range gcTargets {
				s = arena.Append(a, s, new(holder))
			}
			return func(i int) *holder { return s[i] }, a.Reset
		}},
		{"impl=typed", func() (func(int) *holder, func()) {
			ty := arena.NewTyped[holder](arena.WithChunkSize(4 << 10))
			hs := make([]*holder, gcTargets)
			return func(i int) *holder {
				if hs[i] == nil {
					hs[i] = ty.New()
				}
				return hs[i]
			}, ty.Reset
		}},
		{"impl=pool", func() (func(int) *holder, func()) {
			p := arena.NewPool(arena.WithChunkSize(4 << 10))
			a := p.Get()
			hs := make([]*holder, gcTargets)
			return func(i int) *holder {
				if hs[i] == nil {
					hs[i] = arena.New[holder](a)
				}
				return hs[i]
			}, func() { p.Put(a) }
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var inArena, control atomic.Int64
			get, reset := c.alloc()
			for i := range gcTargets {
				fill(get(i), i, &inArena)
				newTarget(i, &control) // dropped at once
			}
			// Churn the heap so that freed memory is reused.
			for i := range 2000 {
				gcSink = make([]byte, 64+i%64)
			}
			gcSink = nil
			collectUntil(t, &control, gcTargets)
			if n := inArena.Load(); n != 0 {
				t.Fatalf("%d heap objects referenced only from arena objects were collected while the arena lives", n)
			}
			for i := range gcTargets {
				check(t, get(i), i)
			}
			// The arena lives on, but Reset cleared the references.
			reset()
			control.Store(0)
			for i := range gcTargets {
				newTarget(i, &control)
			}
			collectUntil(t, &control, gcTargets)
			deadline := time.Now().Add(10 * time.Second)
			for inArena.Load() < gcTargets && time.Now().Before(deadline) {
				runtime.GC()
				time.Sleep(time.Millisecond)
			}
			if n := inArena.Load(); n != gcTargets {
				t.Errorf("after Reset, %d of %d targets collected: the arena still references them", n, gcTargets)
			}
			runtime.KeepAlive(get)
		})
	}
}

// TestGCSafety_LongChains builds linked lists through arena objects only,
// across chunks of several arenas, and checks them after GC cycles.
func TestGCSafety_LongChains(t *testing.T) {
	a := arena.NewArena(arena.WithChunkSize(512))
	ty := arena.NewTyped[holder](arena.WithChunkSize(512))
	var headA, headT *holder
	for i := range 2000 {
		h := arena.New[holder](a)
		h.next, h.s = headA, fmt.Sprint(i)
		headA = h
		g := ty.New()
		g.next, g.b = headT, []byte(fmt.Sprint(i))
		headT = g
	}
	for range 3 {
		runtime.GC()
	}
	i := 1999
	for h, g := headA, headT; h != nil; h, g = h.next, g.next {
		if h.s != fmt.Sprint(i) || string(g.b) != fmt.Sprint(i) {
			t.Fatalf("node %d: %q %q", i, h.s, g.b)
		}
		i--
	}
	if i != -1 {
		t.Fatalf("chain ended at %d", i)
	}
}
