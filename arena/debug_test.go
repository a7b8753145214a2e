//go:build memkitdebug

package arena_test

import (
	"testing"
	"unsafe"

	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/internal/memtest"
)

const msgPoison = "memkit/arena: memory written after its arena was reset or freed"

// ptrPoisoned reports whether memory of types with pointers is poisoned:
// on 64-bit platforms only.
const ptrPoisoned = unsafe.Sizeof(uintptr(0)) == 8

func TestDebug_WriteAfterReset(t *testing.T) {
	a := arena.NewArena()
	stale := arena.New[int64](a)
	a.Reset()
	*stale = 1 // use after Reset
	memtest.CheckPanic(t, msgPoison, func() { arena.New[int64](a) })
}

func TestDebug_WriteAfterResetPointers(t *testing.T) {
	if !ptrPoisoned {
		t.Skip("pointerful memory is not poisoned on 32-bit platforms")
	}
	a := arena.NewArena()
	stale := arena.New[node](a)
	a.Reset()
	stale.right = stale
	memtest.CheckPanic(t, msgPoison, func() { arena.New[node](a) })
}

func TestDebug_WriteAfterFree(t *testing.T) {
	// Freed chunks go to the shared recycler, poisoned: the next arena to
	// take the chunk finds the write.
	type T struct{ a, b, c int64 } // a type of its own, so its recycler is
	a := arena.NewArena()
	stale := arena.MakeSlice[T](a, 10, 10)
	a.Free()
	stale[0].a = 5
	b := arena.NewArena()
	memtest.CheckPanic(t, msgPoison, func() { arena.MakeSlice[T](b, 10, 10) })
}

func TestDebug_TypedWriteAfterReset(t *testing.T) {
	ty := arena.NewTyped[[2]int64]()
	p := ty.New()
	ty.New()
	ty.Reset()
	p[1] = 9
	memtest.CheckPanic(t, msgPoison, func() { ty.New() })
	if !ptrPoisoned {
		return
	}
	tp := arena.NewTyped[node]()
	q := tp.New()
	tp.Reset()
	q.left = q
	memtest.CheckPanic(t, msgPoison, func() { tp.New() })
}

func TestDebug_CleanReuse(t *testing.T) {
	a := arena.NewArena(arena.WithChunkSize(256))
	ty := arena.NewTyped[rec](arena.WithChunkSize(256))
	for range 5 {
		for i := range 200 {
			n := arena.New[rec](a)
			if n.name != "" || n.next != nil {
				t.Fatal("not zeroed")
			}
			n.name, n.next = "x", n
			s := arena.MakeSlice[int](a, i%10, i%10)
			for j := range s {
				s[j] = -1
			}
			s = arena.Append(a, s, 1, 2, 3)
			r := ty.New()
			r.vals = s
		}
		a.Reset()
		ty.Reset()
	}
}
