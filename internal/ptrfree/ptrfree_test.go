package ptrfree_test

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"unsafe"

	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/ptrfree"
)

type record struct {
	ID    uint64
	Score float64
	Name  [24]byte
	Tags  [4]uint16
	Inner struct{ A, B int32 }
}

type Person2 struct {
	Name    string
	Surname string
	Age     int
}

type nested struct {
	ID    int
	Inner struct {
		OK   [3]byte
		Keys [2]struct{ K []int }
	}
}

type withPtr struct {
	N int
	P *int
}

type withIface struct {
	A [2]int
	E error
}

func TestFind_NamesTheFirstPointer(t *testing.T) {
	for _, c := range []struct {
		t          reflect.Type
		path, what string
	}{
		{reflect.TypeFor[Person2](), "Person2.Name", "a string"},
		{reflect.TypeFor[nested](), "nested.Inner.Keys[0].K", "a slice"},
		{reflect.TypeFor[withPtr](), "withPtr.P", "a pointer"},
		{reflect.TypeFor[withIface](), "withIface.E", "an interface"},
		{reflect.TypeFor[*int](), "*int", "a pointer"},
		{reflect.TypeFor[map[string]int](), "map[string]int", "a map"},
		{reflect.TypeFor[chan int](), "chan int", "a channel"},
		{reflect.TypeFor[func()](), "func()", "a func"},
		{reflect.TypeFor[unsafe.Pointer](), "Pointer", "an unsafe.Pointer"},
		{reflect.TypeFor[[2]string](), "[2]string[0]", "a string"},
		{reflect.TypeFor[record](), "", ""},
		{reflect.TypeFor[uintptr](), "", ""},
		{reflect.TypeFor[[0]string](), "", ""},
		{reflect.TypeFor[complex128](), "", ""},
		{reflect.TypeFor[struct{}](), "", ""},
	} {
		// Twice: the second answer comes from the cache.
		for range 2 {
			path, what := ptrfree.Find(c.t)
			if path != c.path || what != c.what {
				t.Errorf("Find(%v) = %q, %q; want %q, %q", c.t, path, what, c.path, c.what)
			}
			if got := ptrfree.HasPointers(c.t); got != (c.what != "") {
				t.Errorf("HasPointers(%v) = %v", c.t, got)
			}
		}
	}
}

func TestCheck_MessageNamesThePackage(t *testing.T) {
	err := ptrfree.Check[Person2]("ringbuf")
	const want = "memkit/ringbuf: Person2.Name is a string: Go pointers cannot live in ringbuf memory"
	if err == nil || err.Error() != want {
		t.Fatalf("Check[Person2](ringbuf) = %v; want %s", err, want)
	}
	var e *ptrfree.Error
	if !errors.As(err, &e) || e.Pkg != "ringbuf" || e.Path != "Person2.Name" || e.What != "a string" {
		t.Fatalf("error %#v", e)
	}
	if err := ptrfree.Check[Person2]("slab"); err == nil ||
		err.Error() != "memkit/slab: Person2.Name is a string: Go pointers cannot live in slab memory" {
		t.Fatalf("Check[Person2](slab) = %v", err)
	}
	if err := ptrfree.Check[record]("ringbuf"); err != nil {
		t.Fatalf("Check[record] = %v; want nil", err)
	}
	memtest.CheckPanic(t, "memkit/slab: withPtr.P is a pointer: Go pointers cannot live in slab memory",
		func() { ptrfree.MustCheck[withPtr]("slab") })
	ptrfree.MustCheck[record]("slab")
}

func TestCheck_CachedCheckDoesNotAllocate(t *testing.T) {
	ptrfree.MustCheck[record]("slab")
	if n := testing.AllocsPerRun(100, func() {
		ptrfree.MustCheck[record]("slab")
		if ptrfree.Check[record]("ringbuf") != nil {
			panic("record has pointers")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per cached check; want 0", n)
	}
}

// Many goroutines checking many types at once agree, under -race.
func TestFind_Concurrent(t *testing.T) {
	types := []reflect.Type{
		reflect.TypeFor[Person2](), reflect.TypeFor[record](), reflect.TypeFor[nested](),
		reflect.TypeFor[[3]int](), reflect.TypeFor[[3]*int](), reflect.TypeFor[withIface](),
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				ty := types[(i+g)%len(types)]
				_, what := ptrfree.Find(ty)
				want := ty != types[1] && ty != types[3]
				if (what != "") != want {
					t.Errorf("Find(%v) = %q", ty, what)
					return
				}
			}
		}()
	}
	wg.Wait()
}
