package arena_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/sysmem"
)

// tera is an element type of 1 TiB on 64-bit platforms (1 MiB on 32-bit
// ones, where a type cannot be that large); tera16 one of 16 MiB.
type (
	tera   [teraLen]byte
	tera16 [16 << 20]byte
)

const teraLen = 1 << (20 + 20*(^uint(0)>>63))

// TestNew_ElementTypeTheSystemCannotAllocate: issue 21 case 5. An element
// type of 1 TiB ended the process with the runtime's fatal "out of memory"
// in New, TryNew, MakeSlice and Typed's calls, because a zero value of T
// was made (on the heap, above 10 MiB) before any check.
func TestNew_ElementTypeTheSystemCannotAllocate(t *testing.T) {
	if sysmem.Available(teraLen) {
		t.Skip("needs a 64-bit system that refuses to map 1 TiB")
	}
	a := arena.NewArena()
	memtest.CheckPanic(t, msgNoMemory, func() { arena.New[tera](a) })
	memtest.CheckPanic(t, msgNoMemory, func() { arena.MakeSlice[tera](a, 1, 1) })
	if p, err := arena.TryNew[tera](a); p != nil || !errors.Is(err, arena.ErrBudget) {
		t.Fatalf("TryNew of 1 TiB = %p, %v; want nil, ErrBudget", p, err)
	}
	if s, err := arena.TryMakeSlice[tera](a, 0, 1); s != nil || !errors.Is(err, arena.ErrBudget) {
		t.Fatalf("TryMakeSlice of 1 TiB = %v, %v; want nil, ErrBudget", s, err)
	}
	ty := arena.NewTyped[tera]()
	memtest.CheckPanic(t, msgNoMemory, func() { ty.New() })
	memtest.CheckPanic(t, msgNoMemory, func() { ty.MakeSlice(1, 1) })
	if p, err := ty.TryNew(); p != nil || !errors.Is(err, arena.ErrBudget) {
		t.Fatalf("Typed.TryNew of 1 TiB = %p, %v; want nil, ErrBudget", p, err)
	}
	if b := arena.MakeSlice[byte](a, 3, 3); len(b) != 3 {
		t.Fatal("the arena is not usable after the refusal")
	}
	ty.Free()
	a.Free()
}

// TestNew_LargeElementTypeCostsOneObject: a 16 MiB element type cost two
// hidden 16 MiB heap copies of its zero value per call, on top of the
// object. Each call may allocate the object's own memory (a dedicated
// allocation), and nothing more.
func TestNew_LargeElementTypeCostsOneObject(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build poisons and records each allocation")
	}
	const size = 16 << 20
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"New", func() { a := arena.NewArena(); arena.New[tera16](a).set(1); a.Free() }},
		{"TryNew", func() { a := arena.NewArena(); p, _ := arena.TryNew[tera16](a); p.set(2); a.Free() }},
		{"MakeSlice", func() { a := arena.NewArena(); arena.MakeSlice[tera16](a, 1, 1)[0].set(3); a.Free() }},
		{"Typed.New", func() { ty := arena.NewTyped[tera16](); ty.New().set(4); ty.Free() }},
		{"Typed.TryNew", func() { ty := arena.NewTyped[tera16](); p, _ := ty.TryNew(); p.set(5); ty.Free() }},
		{"Typed.MakeSlice", func() { ty := arena.NewTyped[tera16](); ty.MakeSlice(1, 1)[0].set(6); ty.Free() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.f()
			var before, after runtime.MemStats
			const runs = 4
			runtime.ReadMemStats(&before)
			for range runs {
				c.f()
			}
			runtime.ReadMemStats(&after)
			if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > size+size/8 {
				t.Fatalf("%s of a 16 MiB type allocated %d bytes per call; want at most the object's %d (+1/8)", c.name, per, size)
			}
		})
	}
}

func (x *tera16) set(v byte) { x[0], x[len(x)-1] = v, v }
