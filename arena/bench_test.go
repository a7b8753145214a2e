package arena_test

import (
	"runtime"
	"testing"

	"github.com/memkit/memkit/arena"
)

// Object types of the New benchmarks: 16, 64 and 256 bytes on 64-bit
// platforms, with pointers (scanned by the GC) and without.
type (
	ptr16   struct{ _, _ *int }
	ptr64   struct{ _ [8]*int }
	ptr256  struct{ _ [32]*int }
	flat16  struct{ _, _ int64 }
	flat64  struct{ _ [8]int64 }
	flat256 struct{ _ [32]int64 }
)

// batch is how many objects a New benchmark allocates between Resets (or
// keeps live, for new): one op is one object, its share of the Reset
// included.
const batch = 1024

// BenchmarkNew measures one object allocation, New[T] on an Arena,
// Typed[T].New and new(T), with every call made on the concrete type. The
// issue's targets are ptr=yes/size=16B: at most 7.5 ns for impl=memkit, at
// most 3 ns for impl=memkit-typed, 0 allocs/op for both:
//
//	go test -run '^$' -bench 'New/' -count 6 ./arena | benchstat -col /impl -
func BenchmarkNew(b *testing.B) {
	benchNew[ptr16](b, "ptr=yes/size=16B")
	benchNew[ptr64](b, "ptr=yes/size=64B")
	benchNew[ptr256](b, "ptr=yes/size=256B")
	benchNew[flat16](b, "ptr=no/size=16B")
	benchNew[flat64](b, "ptr=no/size=64B")
	benchNew[flat256](b, "ptr=no/size=256B")
}

// sink keeps the new(T) baseline's objects reachable until the batch is
// overwritten, as an arena keeps its objects until Reset.
var sink any

func benchNew[T any](b *testing.B, name string) {
	b.Run(name+"/impl=memkit", func(b *testing.B) {
		a := arena.NewArena()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			arena.New[T](a)
			if i++; i == batch {
				a.Reset()
				i = 0
			}
		}
	})
	b.Run(name+"/impl=memkit-typed", func(b *testing.B) {
		t := arena.NewTyped[T]()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			t.New()
			if i++; i == batch {
				t.Reset()
				i = 0
			}
		}
	})
	b.Run(name+"/impl=new", func(b *testing.B) {
		keep := new([batch]*T)
		sink = keep
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			keep[i] = new(T)
			if i++; i == batch {
				i = 0
			}
		}
	})
}

// BenchmarkTree builds and walks a binary tree of depth 12 (8191 nodes)
// per op, with new, an Arena and a Typed arena reset after each tree, and
// reports the GC cycles per op.
func BenchmarkTree(b *testing.B) {
	const depth = 12
	run := func(b *testing.B, alloc func() *node, reset func()) {
		b.ReportAllocs()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		gc0 := ms.NumGC
		for b.Loop() {
			if n := count(tree(depth, alloc)); n != 1<<(depth+1)-1 {
				b.Fatal(n)
			}
			reset()
		}
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.NumGC-gc0)/float64(b.N), "gcs/op")
	}
	b.Run("impl=memkit", func(b *testing.B) {
		a := arena.NewArena()
		run(b, func() *node { return arena.New[node](a) }, a.Reset)
	})
	b.Run("impl=memkit-typed", func(b *testing.B) {
		t := arena.NewTyped[node]()
		run(b, t.New, t.Reset)
	})
	b.Run("impl=new", func(b *testing.B) {
		run(b, func() *node { return new(node) }, func() {})
	})
}

func count(n *node) int {
	if n.left == nil {
		return 1
	}
	return 1 + count(n.left) + count(n.right)
}

// BenchmarkPool_GetPut measures a request on GOMAXPROCS goroutines: Get an
// arena from a Pool, allocate 16 nodes and a 256-byte buffer, Put it back.
func BenchmarkPool_GetPut(b *testing.B) {
	p := arena.NewPool()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a := p.Get()
			for range 16 {
				arena.New[node](a)
			}
			arena.MakeSlice[byte](a, 256, 256)[0] = 1
			p.Put(a)
		}
	})
}

// BenchmarkAppend grows a slice of ints to 1000 elements per op, in an
// arena and on the heap.
func BenchmarkAppend(b *testing.B) {
	b.Run("impl=memkit", func(b *testing.B) {
		a := arena.NewArena()
		b.ReportAllocs()
		for b.Loop() {
			var s []int
			for i := range 1000 {
				s = arena.Append(a, s, i)
			}
			a.Reset()
		}
	})
	b.Run("impl=append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s []int
			for i := range 1000 {
				s = append(s, i)
			}
			sink = s
		}
	})
}
