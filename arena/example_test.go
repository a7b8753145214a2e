package arena_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
)

type Person struct {
	Name    string
	Friends []*Person
}

func Example() {
	a := arena.NewArena()
	alice := arena.New[Person](a) // zeroed, like new(Person)
	alice.Name = arena.CloneString(a, "Alice")
	bob := arena.New[Person](a)
	bob.Name = "Bob" // pointers to heap data are fine: the GC sees them
	alice.Friends = arena.Append(a, alice.Friends, bob)
	bob.Friends = arena.MakeSlice[*Person](a, 1, 4)
	bob.Friends[0] = alice
	fmt.Println(alice.Name, "->", alice.Friends[0].Name, "->", bob.Friends[0].Name)

	name := arena.Clone(alice.Name) // a heap copy outlives the arena
	a.Free()                        // every object at once; none may be used now
	fmt.Println(name)
	// Output:
	// Alice -> Bob -> Alice
	// Alice
}

func ExampleArena_Reset() {
	a := arena.NewArena()
	for request := range 3 {
		words := arena.MakeSlice[string](a, 0, 2)
		for _, w := range strings.Fields("hello arena") {
			words = arena.Append(a, words, arena.CloneString(a, w))
		}
		fmt.Println(request, strings.Join(words, " "))
		a.Reset() // free the request's objects, keep the memory
	}
	var s memkit.Stats
	a.PublishStats()
	a.ReadStats(&s)
	fmt.Println("live", s.LiveObjects, "allocs", s.Allocs, "chunks taken", s.Grows)
	// Output:
	// 0 hello arena
	// 1 hello arena
	// 2 hello arena
	// live 0 allocs 9 chunks taken 2
}

func ExampleNewArena() {
	a := arena.NewArena(
		arena.WithChunkSize(4<<10), // small chunks for many small arenas
		arena.WithBudget(16<<10),   // at most 16 KiB held
	)
	for range 100 {
		arena.New[Person](a)
	}
	var s memkit.Stats
	a.PublishStats()
	a.ReadStats(&s)
	fmt.Println(s.LiveObjects, "objects,", s.InUseBytes, "bytes in use,", s.ReservedBytes, "reserved")
	// Output: 100 objects, 4000 bytes in use, 4080 reserved
}

func ExampleTryNew() {
	a := arena.NewArena(arena.WithChunkSize(1<<10), arena.WithBudget(1<<10))
	n := 0
	for {
		_, err := arena.TryNew[[64]byte](a)
		if errors.Is(err, arena.ErrBudget) {
			break
		}
		n++
	}
	fmt.Println(n, "objects fit")
	p := arena.New[[64]byte](a) // New falls back to the heap instead
	var s memkit.Stats
	a.PublishStats()
	a.ReadStats(&s)
	fmt.Println(p != nil, s.HeapFallbacks, "fallback,", s.Failures, "failure")
	// Output:
	// 16 objects fit
	// true 1 fallback, 1 failure
}

type Tree struct {
	Left, Right *Tree
}

func (t *Tree) Count() int {
	if t.Left == nil {
		return 1
	}
	return 1 + t.Left.Count() + t.Right.Count()
}

func ExampleTyped() {
	nodes := arena.NewTyped[Tree]()
	var build func(depth int) *Tree
	build = func(depth int) *Tree {
		t := nodes.New() // an index bump, inlined
		if depth > 0 {
			t.Left, t.Right = build(depth-1), build(depth-1)
		}
		return t
	}
	for depth := range 3 {
		fmt.Println(build(depth * 4).Count())
		nodes.Reset() // the next tree reuses the memory
	}
	nodes.Free()
	// Output:
	// 1
	// 31
	// 511
}

func ExamplePool() {
	pool := arena.NewPool(arena.WithChunkSize(16 << 10))
	handle := func(body string) int {
		a := pool.Get() // one arena per request, from any goroutine
		defer pool.Put(a)
		fields := arena.MakeSlice[string](a, 0, 8)
		for _, f := range strings.Split(body, ",") {
			fields = arena.Append(a, fields, arena.CloneString(a, f))
		}
		return len(fields)
	}
	fmt.Println(handle("a,b,c"), handle("d,e"))
	// Output: 3 2
}

func ExampleClone() {
	a := arena.NewArena()
	s := arena.MakeSlice[int](a, 3, 10)
	s[0], s[1], s[2] = 1, 2, 3
	h := arena.Clone(s) // on the heap: len 3, cap 3
	a.Free()
	fmt.Println(h, len(h), cap(h))
	// Output: [1 2 3] 3 3
}
