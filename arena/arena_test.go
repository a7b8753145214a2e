package arena_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/internal/sysmem"
)

// The exact panic values, part of the API.
const (
	msgNegative = "memkit/arena: negative length"
	msgLenCap   = "memkit/arena: length greater than capacity"
	msgFreed    = "memkit/arena: use of freed arena"
	msgForeign  = "memkit/arena: Put of an arena not from this pool"
	msgPutTwice = "memkit/arena: Put of an arena already in the pool"
	msgClone    = "memkit/arena: Clone of a type that is not a pointer, slice or string"
	msgTooLarge = "memkit/arena: requested size too large"
)

type node struct {
	left, right *node
}

// p16 is a 16-byte type with a pointer, on every platform.
type p16 struct {
	p *int
	_ [16 - unsafe.Sizeof(uintptr(0))]byte
}

type rec struct {
	name string
	vals []int
	next *rec
	n    int64
}

func addr[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func TestNew_ZeroedDistinctAligned(t *testing.T) {
	a := arena.NewArena(arena.WithChunkSize(1 << 10))
	seen := map[uintptr]bool{}
	for i := range 1000 {
		var p uintptr
		switch i % 4 {
		case 0:
			n := arena.New[node](a)
			if n.left != nil || n.right != nil {
				t.Fatal("node not zeroed")
			}
			n.left = n
			p = addr(n)
		case 1:
			v := arena.New[int64](a)
			if *v != 0 {
				t.Fatal("int64 not zeroed")
			}
			*v = -1
			p = addr(v)
			if p%unsafe.Alignof(*v) != 0 {
				t.Fatalf("int64 at %#x misaligned", p)
			}
		case 2:
			b := arena.New[byte](a)
			*b = 0xff
			p = addr(b)
		case 3:
			r := arena.New[rec](a)
			if r.name != "" || r.vals != nil || r.next != nil || r.n != 0 {
				t.Fatal("rec not zeroed")
			}
			r.name, r.n = "x", 7
			p = addr(r)
			if p%8 != 0 {
				t.Fatalf("rec at %#x misaligned", p)
			}
		}
		if seen[p] {
			t.Fatalf("object %d at %#x handed out twice", i, p)
		}
		seen[p] = true
	}
}

func TestArena_ResetZeroesAndReuses(t *testing.T) {
	a := arena.NewArena()
	var first []*rec
	for i := range 100 {
		r := arena.New[rec](a)
		r.name, r.vals, r.n = "x", []int{i}, int64(i)
		r.next = r
		first = append(first, r)
	}
	b := arena.MakeSlice[uint32](a, 100, 100)
	for i := range b {
		b[i] = 0xdeadbeef
	}
	a.Reset()
	reused := 0
	for i := range 100 {
		r := arena.New[rec](a)
		if r.name != "" || r.vals != nil || r.next != nil || r.n != 0 {
			t.Fatalf("object %d not zeroed after Reset: %+v", i, *r)
		}
		if r == first[i] {
			reused++
		}
	}
	if reused != 100 {
		t.Errorf("%d of 100 objects reused their memory after Reset", reused)
	}
	b2 := arena.MakeSlice[uint32](a, 100, 100)
	if &b2[0] != &b[0] {
		t.Errorf("slice not reused after Reset")
	}
	if !isZero(unsafe.Slice((*byte)(unsafe.Pointer(&b2[0])), 400)) {
		t.Error("slice not zeroed after Reset")
	}
}

func TestArena_FreedPanics(t *testing.T) {
	a := arena.NewArena()
	arena.New[int](a)
	a.Free()
	for name, c := range map[string]struct {
		op string // the checked build's report names it
		f  func()
	}{
		"New":          {"New", func() { arena.New[int](a) }},
		"NewPtr":       {"New", func() { arena.New[node](a) }},
		"TryNew":       {"New", func() { arena.TryNew[node](a) }},
		"MakeSlice":    {"New", func() { arena.MakeSlice[int](a, 1, 1) }},
		"MakeSlice0":   {"New", func() { arena.MakeSlice[int](a, 0, 0) }},
		"TryMakeSlice": {"New", func() { arena.TryMakeSlice[int](a, 1, 1) }},
		"Append":       {"Append", func() { arena.Append[int](a, nil, 1) }},
		"CloneString":  {"New", func() { arena.CloneString(a, "x") }},
		"CloneString0": {"CloneString", func() { arena.CloneString(a, "") }},
		"CloneBytes":   {"New", func() { arena.CloneBytes(a, []byte("x")) }},
		"CloneBytes0":  {"CloneBytes", func() { arena.CloneBytes(a, nil) }},
		"Reset":        {"Reset", a.Reset},
		"Free":         {"Free", a.Free},
		"ZeroSize":     {"New", func() { arena.New[struct{}](a) }},
	} {
		t.Run(name, func(t *testing.T) { wantFreed(t, c.op, c.f) })
	}
	var s memkit.Stats
	a.ReadStats(&s) // allowed
	if s.ReservedBytes != 0 || s.InUseBytes != 0 {
		t.Errorf("freed arena holds memory: %+v", s)
	}
}

func TestMakeSlice_Panics(t *testing.T) {
	a := arena.NewArena()
	ty := arena.NewTyped[node]()
	for _, c := range []struct {
		len, cap int
		want     string
	}{
		{-1, 0, msgNegative},
		{0, -1, msgNegative},
		{-5, -5, msgNegative},
		{3, 2, msgLenCap},
		{1, 0, msgLenCap},
		{0, math.MaxInt, msgTooLarge},
	} {
		t.Run(fmt.Sprintf("len=%d/cap=%d", c.len, c.cap), func(t *testing.T) {
			memtest.CheckPanic(t, c.want, func() { arena.MakeSlice[int64](a, c.len, c.cap) })
			memtest.CheckPanic(t, c.want, func() { arena.TryMakeSlice[node](a, c.len, c.cap) })
			memtest.CheckPanic(t, c.want, func() { ty.MakeSlice(c.len, c.cap) })
		})
	}
}

// A slice the system cannot allocate is a memkit panic (MakeSlice) or an
// error (TryMakeSlice), never the runtime's fatal "out of memory" (issue 13
// case 6: MakeSlice[byte](a, 0, 1<<46) ended the process).
func TestMakeSlice_MoreThanTheSystemHas(t *testing.T) {
	if tib64 == 0 || sysmem.Available(uint64(tib64)) {
		t.Skip("needs a 64-bit system that refuses to map 64 TiB")
	}
	a := arena.NewArena()
	ty := arena.NewTyped[[1024]byte]()
	const want = "memkit/arena: requested size more than the system can allocate"
	memtest.CheckPanic(t, want, func() { arena.MakeSlice[byte](a, 0, tib64) })
	memtest.CheckPanic(t, want, func() { ty.MakeSlice(0, tib64>>10) })
	if s, err := arena.TryMakeSlice[byte](a, 0, tib64); s != nil || !errors.Is(err, arena.ErrBudget) {
		t.Fatalf("TryMakeSlice of 64 TiB = %v, %v; want nil, ErrBudget", s, err)
	}
	var st memkit.Stats
	a.PublishStats()
	a.ReadStats(&st)
	if st.Failures != 1 || st.ReservedBytes != 0 {
		t.Fatalf("stats %v; want one failure, nothing reserved", &st)
	}
	if b := arena.MakeSlice[byte](a, 3, 3); len(b) != 3 {
		t.Fatal("the arena is not usable after the refusal")
	}
}

func TestMakeSlice_LenCap(t *testing.T) {
	a := arena.NewArena()
	ty := arena.NewTyped[rec]()
	for _, c := range [][2]int{{0, 0}, {0, 1}, {1, 1}, {3, 10}, {100, 100}, {0, 5000}} {
		s := arena.MakeSlice[rec](a, c[0], c[1])
		u := ty.MakeSlice(c[0], c[1])
		b := arena.MakeSlice[byte](a, c[0], c[1])
		if len(s) != c[0] || cap(s) != c[1] || len(u) != c[0] || cap(u) != c[1] || len(b) != c[0] || cap(b) != c[1] {
			t.Errorf("MakeSlice(%d, %d): len/cap %d/%d, typed %d/%d, bytes %d/%d",
				c[0], c[1], len(s), cap(s), len(u), cap(u), len(b), cap(b))
		}
		if s == nil || u == nil || b == nil {
			t.Errorf("MakeSlice(%d, %d) is nil", c[0], c[1])
		}
		s = s[:cap(s)]
		for i := range s {
			if s[i].name != "" || s[i].next != nil {
				t.Fatal("slice not zeroed")
			}
			s[i].name = "set"
		}
		for i := range b[:cap(b)] {
			if b[:cap(b)][i] != 0 {
				t.Fatal("byte slice not zeroed")
			}
		}
	}
}

func TestZeroSize(t *testing.T) {
	a := arena.NewArena()
	p, q := arena.New[struct{}](a), arena.New[[0]int64](a)
	if p == nil || q == nil {
		t.Fatal("New of a zero-size type returned nil")
	}
	s := arena.MakeSlice[struct{}](a, 5, 10)
	if len(s) != 5 || cap(s) != 10 {
		t.Errorf("len/cap %d/%d", len(s), cap(s))
	}
	s = arena.Append(a, s, struct{}{})
	if len(s) != 6 {
		t.Errorf("Append: len %d", len(s))
	}
	big := arena.MakeSlice[struct{}](a, math.MaxInt, math.MaxInt)
	if len(big) != math.MaxInt {
		t.Errorf("len %d", len(big))
	}
	ty := arena.NewTyped[struct{}]()
	for range 10 {
		if ty.New() == nil {
			t.Fatal("Typed.New of a zero-size type returned nil")
		}
	}
	if u := ty.MakeSlice(3, 4); len(u) != 3 || cap(u) != 4 {
		t.Errorf("Typed.MakeSlice: len/cap %d/%d", len(u), cap(u))
	}
	var st memkit.Stats
	ty.PublishStats()
	ty.ReadStats(&st)
	if st.LiveObjects != 11 || st.InUseBytes != 0 || st.ReservedBytes != 0 {
		t.Errorf("stats %+v", st)
	}
	ty.Reset()
	ty.New()
	ty.Free()
	a.PublishStats()
	a.ReadStats(&st)
	if st.ReservedBytes != 0 || st.LiveObjects != 4 {
		t.Errorf("stats %+v", st)
	}
	a.Reset()
	a.Free()
}

func TestAppend(t *testing.T) {
	a := arena.NewArena()
	var s []int
	for i := range 1000 {
		s = arena.Append(a, s, i)
	}
	for i := range s {
		if s[i] != i {
			t.Fatalf("s[%d] = %d", i, s[i])
		}
	}
	// In place: the last allocation of its chunk grows without copying.
	x := arena.MakeSlice[int64](a, 2, 2)
	x[0], x[1] = 1, 2
	y := arena.Append(a, x, 3)
	if &y[0] != &x[0] || cap(y) < 3 || y[2] != 3 {
		t.Errorf("Append did not grow the last allocation in place: %p %p cap %d", &y[0], &x[0], cap(y))
	}
	// Not the last allocation: copied.
	z := arena.MakeSlice[int64](a, 1, 1)
	arena.New[int64](a)
	w := arena.Append(a, z, 5, 6)
	if &w[0] == &z[0] || len(w) != 3 || w[1] != 5 || w[2] != 6 {
		t.Errorf("Append: %v", w)
	}
	// Pointerful and from the heap.
	h := []*node{{}, {}}
	h2 := arena.Append(a, h[:2:2], &node{})
	if len(h2) != 3 || h2[0] != h[0] || h2[2] == nil {
		t.Errorf("Append of a heap slice: %v", h2)
	}
	// Capacity to spare: the built-in append's behaviour.
	c := make([]int, 1, 10)
	if c2 := arena.Append(a, c, 1); &c2[0] != &c[0] {
		t.Error("Append with spare capacity moved the slice")
	}
	if got := arena.Append[int](a, nil); got != nil {
		t.Errorf("Append(nil) = %v", got)
	}
}

func TestClones(t *testing.T) {
	a := arena.NewArena()
	src := []byte("hello, arena")
	b := arena.CloneBytes(a, src)
	src[0] = 'j'
	if string(b) != "hello, arena" || cap(b) != len(b) {
		t.Errorf("CloneBytes = %q cap %d", b, cap(b))
	}
	if arena.CloneBytes(a, nil) != nil {
		t.Error("CloneBytes(nil) != nil")
	}
	if e := arena.CloneBytes(a, []byte{}); e == nil || len(e) != 0 {
		t.Errorf("CloneBytes(empty) = %#v", e)
	}
	heap := strings.Repeat("ab", 10)
	s := arena.CloneString(a, heap)
	if s != heap || unsafe.StringData(s) == unsafe.StringData(heap) {
		t.Errorf("CloneString = %q", s)
	}
	if arena.CloneString(a, "") != "" {
		t.Error("CloneString(\"\") != \"\"")
	}

	n := arena.New[rec](a)
	n.name, n.n = s, 3
	c := arena.Clone(n)
	if c == n || c.name != s || c.n != 3 {
		t.Errorf("Clone(pointer) = %p %+v", c, c)
	}
	sl := arena.MakeSlice[int](a, 3, 8)
	sl[1] = 5
	cs := arena.Clone(sl)
	if &cs[0] == &sl[0] || len(cs) != 3 || cap(cs) != 3 || cs[1] != 5 {
		t.Errorf("Clone(slice) = %v", cs)
	}
	if cst := arena.Clone(s); cst != s || unsafe.StringData(cst) == unsafe.StringData(s) {
		t.Errorf("Clone(string) = %q", cst)
	}
	type myString string
	if got := arena.Clone(myString("x")); got != "x" {
		t.Errorf("Clone(myString) = %q", got)
	}
	type myPtr *rec
	if got := arena.Clone(myPtr(n)); got == myPtr(n) || got.n != 3 {
		t.Errorf("Clone(myPtr) = %v", got)
	}
	if arena.Clone[*rec](nil) != nil || arena.Clone[[]int](nil) != nil || arena.Clone("") != "" {
		t.Error("Clone of nil or empty is not nil or empty")
	}
	memtest.CheckPanic(t, msgClone, func() { arena.Clone(5) })
	memtest.CheckPanic(t, msgClone, func() { arena.Clone(rec{}) })
	a.Free()
	if c.name != "hello, arena"[:0]+s || c.n != 3 {
		t.Errorf("clone changed by Free: %+v", c)
	}
}

func TestBudget(t *testing.T) {
	const budget = 10 << 10
	a := arena.NewArena(arena.WithChunkSize(4<<10), arena.WithBudget(budget))
	var st memkit.Stats
	ok, failed := 0, 0
	for range 2000 {
		p, err := arena.TryNew[p16](a)
		if err != nil {
			if !errors.Is(err, arena.ErrBudget) || p != nil {
				t.Fatalf("TryNew: %v, %p", err, p)
			}
			failed++
			continue
		}
		ok++
	}
	a.PublishStats()
	a.ReadStats(&st)
	if st.ReservedBytes > budget || ok != budget/16 || st.Failures != uint64(failed) {
		t.Errorf("ok %d failed %d, stats %+v", ok, failed, st)
	}
	before := st
	// New falls back to the heap.
	p := arena.New[p16](a)
	p.p = new(int)
	s := arena.MakeSlice[int](a, 10, 10)
	s[9] = 1
	str := arena.CloneString(a, "over budget")
	a.PublishStats()
	a.ReadStats(&st)
	if st.HeapFallbacks != 3 || st.ReservedBytes != before.ReservedBytes || st.LiveObjects != before.LiveObjects || str != "over budget" {
		t.Errorf("after fallbacks: %+v", st)
	}
	if _, err := arena.TryMakeSlice[byte](a, 1, 1); err == nil {
		// the pointer-free chunk has room: the noscan lane took its own chunk
	}
	a.Reset()
	if p, err := arena.TryNew[p16](a); err != nil || p == nil {
		t.Errorf("TryNew after Reset: %v", err)
	}
}

func TestBudget_SmallLastChunk(t *testing.T) {
	a := arena.NewArena(arena.WithChunkSize(4<<10), arena.WithBudget(5<<10))
	n := 0
	for {
		if _, err := arena.TryNew[p16](a); err != nil {
			break
		}
		n++
	}
	if n != 5<<10/16 {
		t.Errorf("%d nodes fit in a 5 KiB budget; want %d", n, 5<<10/16)
	}
	var st memkit.Stats
	a.PublishStats()
	a.ReadStats(&st)
	if st.ReservedBytes != 5<<10 || st.InUseBytes != 5<<10 {
		t.Errorf("stats %+v", st)
	}
	a.Free()
}

func TestTyped_Budget(t *testing.T) {
	ty := arena.NewTyped[p16](arena.WithChunkSize(1<<10), arena.WithBudget(2<<10))
	n := 0
	for {
		if _, err := ty.TryNew(); err != nil {
			if !errors.Is(err, arena.ErrBudget) {
				t.Fatal(err)
			}
			break
		}
		n++
	}
	if n != 2<<10/16 {
		t.Errorf("%d nodes; want %d", n, 2<<10/16)
	}
	p := ty.New() // from the heap
	p.p = new(int)
	var st memkit.Stats
	ty.PublishStats()
	ty.ReadStats(&st)
	if st.HeapFallbacks != 1 || st.LiveObjects != uint64(n) || st.ReservedBytes != 2<<10 || st.Failures != 1 {
		t.Errorf("stats %+v", st)
	}
	ty.Reset()
	if _, err := ty.TryNew(); err != nil {
		t.Error(err)
	}
	ty.Free()
}

func TestAccount(t *testing.T) {
	var held int64
	refuse := false
	errFull := errors.New("monitor full")
	acct := func(d int64) error {
		if d > 0 && refuse {
			return errFull
		}
		held += d
		return nil
	}
	a := arena.NewArena(arena.WithChunkSize(1<<10), arena.WithAccount(acct))
	for range 200 {
		arena.New[node](a)
		arena.New[int](a)
	}
	arena.MakeSlice[byte](a, 1000, 1000) // large: dedicated
	var st memkit.Stats
	a.PublishStats()
	a.ReadStats(&st)
	if held != int64(st.ReservedBytes) || held == 0 {
		t.Errorf("account holds %d, arena reserves %d", held, st.ReservedBytes)
	}
	refuse = true
	for range 100 {
		if _, err := arena.TryNew[node](a); err != nil {
			if !errors.Is(err, arena.ErrBudget) || !errors.Is(err, errFull) {
				t.Fatalf("err %v does not wrap both ErrBudget and the account's", err)
			}
			break
		}
	}
	refuse = false
	a.Reset()
	a.PublishStats()
	a.ReadStats(&st)
	if held != int64(st.ReservedBytes) {
		t.Errorf("after Reset: account holds %d, arena reserves %d", held, st.ReservedBytes)
	}
	a.Free()
	if held != 0 {
		t.Errorf("after Free: account holds %d", held)
	}

	ty := arena.NewTyped[node](arena.WithChunkSize(1<<10), arena.WithAccount(acct))
	for range 300 {
		ty.New()
	}
	ty.PublishStats()
	ty.ReadStats(&st)
	if held != int64(st.ReservedBytes) {
		t.Errorf("Typed: account holds %d, arena reserves %d", held, st.ReservedBytes)
	}
	ty.Free()
	if held != 0 {
		t.Errorf("Typed after Free: account holds %d", held)
	}
}

func TestOptions_Panics(t *testing.T) {
	memtest.CheckPanic(t, "memkit/arena: chunk size 0 out of range [1, 1GiB]", func() { arena.NewArena(arena.WithChunkSize(0)) })
	memtest.CheckPanic(t, "memkit/arena: chunk size 1073741825 out of range [1, 1GiB]", func() { arena.NewTyped[int](arena.WithChunkSize(1<<30 + 1)) })
	// Issue 13 case 10: a nil Option was a nil dereference.
	memtest.CheckPanic(t, "memkit/arena: option 1 of 1 is nil", func() { arena.NewArena(nil) })
	// Building an option is never a mistake: only a constructor judges it.
	_ = arena.WithBudgetAlert(-1, nil)
	_ = arena.WithChunkSize(-1)
}

func TestStats(t *testing.T) {
	a := arena.NewArena(arena.WithChunkSize(1 << 10))
	for range 100 {
		arena.New[p16](a) // 16 B
	}
	arena.MakeSlice[int64](a, 3, 4) // 32 B
	arena.New[byte](a)              // 1 B
	arena.MakeSlice[p16](a, 0, 64)  // 1 KiB: dedicated
	var st memkit.Stats
	a.PublishStats()
	a.ReadStats(&st)
	want := memkit.Stats{
		InUseBytes: 100*16 + 32 + 1 + 1024, LiveObjects: 103, Allocs: 103,
		// node chunks: 1 KiB holds 64, so 2; one pointer-free chunk; one dedicated.
		ReservedBytes: 2<<10 + 1<<10 + 1024, Grows: 4,
	}
	if st.InUseBytes != want.InUseBytes || st.LiveObjects != want.LiveObjects || st.Allocs != want.Allocs ||
		st.ReservedBytes != want.ReservedBytes || st.Grows != want.Grows {
		t.Errorf("stats\n%+v\nwant\n%+v", st, want)
	}
	a.Reset()
	a.PublishStats()
	a.ReadStats(&st)
	if st.InUseBytes != 0 || st.LiveObjects != 0 || st.Frees != 103 || st.Allocs != 103 || st.ReservedBytes != 3<<10 || st.Releases != 1 {
		t.Errorf("after Reset: %+v", st)
	}
	arena.New[p16](a)
	a.Reset() // chunks unused for a cycle go to the recycler
	a.PublishStats()
	a.ReadStats(&st)
	if st.ReservedBytes != 1<<10 {
		t.Errorf("after a second Reset: %+v", st)
	}
	a.Free()
	a.PublishStats()
	a.ReadStats(&st)
	if st.ReservedBytes != 0 {
		t.Errorf("after Free: %+v", st)
	}

	ty := arena.NewTyped[p16](arena.WithChunkSize(1 << 10))
	for range 100 {
		ty.New()
	}
	ty.MakeSlice(2, 10)  // 160 B, fits
	ty.MakeSlice(0, 100) // dedicated
	ty.PublishStats()
	ty.ReadStats(&st)
	if st.LiveObjects != 102 || st.InUseBytes != 110*16+1600 || st.ReservedBytes != 2<<10+1600 || st.Grows != 3 {
		t.Errorf("Typed stats %+v", st)
	}
	ty.Reset()
	ty.PublishStats()
	ty.ReadStats(&st)
	if st.LiveObjects != 0 || st.Frees != 102 || st.ReservedBytes != 2<<10 {
		t.Errorf("Typed after Reset %+v", st)
	}
}

func TestLarge(t *testing.T) {
	a := arena.NewArena(arena.WithChunkSize(1 << 10))
	type big struct {
		p [100]*int
	}
	x := 5
	for range 10 {
		b := arena.New[big](a) // 800 B > chunk/4: dedicated
		b.p[99] = &x
	}
	s := arena.MakeSlice[byte](a, 300, 300)
	s[299] = 1
	a.Reset()
	var st memkit.Stats
	a.PublishStats()
	a.ReadStats(&st)
	if st.Releases != 11 || st.ReservedBytes != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestArena_ZeroValue(t *testing.T) {
	var a arena.Arena
	p := arena.New[node](&a)
	p.left = p
	s := arena.Append(&a, nil, 1, 2, 3)
	if len(s) != 3 {
		t.Fatal(s)
	}
	a.Reset()
	a.Free()
	var ty arena.Typed[int]
	memtest.CheckPanic(t, "memkit/arena: Typed not created with NewTyped", func() { ty.New() })
}

func TestManyTypes(t *testing.T) {
	// More pointerful types than cache entries: some share an entry and go
	// through the map.
	a := arena.NewArena(arena.WithChunkSize(256))
	type (
		t0  struct{ p *int }
		t1  struct{ _ *int8 }
		t2  struct{ _ *int16 }
		t3  struct{ _ *int32 }
		t4  struct{ _ *int64 }
		t5  struct{ _ *uint }
		t6  struct{ _ *uint8 }
		t7  struct{ _ *uint16 }
		t8  struct{ _ *uint32 }
		t9  struct{ _ *uint64 }
		t10 struct{ _ *float32 }
		t11 struct{ _ *float64 }
		t12 struct{ _ *string }
		t13 struct{ _ *bool }
		t14 struct{ _ *byte }
		t15 struct{ _ *rune }
		t16 struct{ _ *node }
		t17 struct{ _ *rec }
		t18 struct{ _ *error }
		t19 struct{ p *any }
	)
	x := 1
	for round := range 3 {
		for range 50 {
			arena.New[t0](a).p = &x
			arena.New[t1](a)
			arena.New[t2](a)
			arena.New[t3](a)
			arena.New[t4](a)
			arena.New[t5](a)
			arena.New[t6](a)
			arena.New[t7](a)
			arena.New[t8](a)
			arena.New[t9](a)
			arena.New[t10](a)
			arena.New[t11](a)
			arena.New[t12](a)
			arena.New[t13](a)
			arena.New[t14](a)
			arena.New[t15](a)
			arena.New[t16](a)
			arena.New[t17](a)
			arena.New[t18](a)
			if p := arena.New[t19](a); p.p != nil {
				t.Fatalf("round %d: not zeroed", round)
			}
		}
		var st memkit.Stats
		a.PublishStats()
		a.ReadStats(&st)
		if st.LiveObjects != 1000 || st.InUseBytes != 1000*uint64(unsafe.Sizeof(uintptr(0))) {
			t.Fatalf("round %d: %+v", round, st)
		}
		a.Reset()
	}
}

func TestTyped_Layout(t *testing.T) {
	arena.CheckTypedLayout[byte](t)
	arena.CheckTypedLayout[node](t)
	arena.CheckTypedLayout[struct{}](t)
	arena.CheckTypedLayout[[1000]string](t)
}

func TestTyped_ResetFree(t *testing.T) {
	ty := arena.NewTyped[rec](arena.WithChunkSize(1 << 10))
	var first []*rec
	for i := range 100 {
		r := ty.New()
		r.name, r.n, r.next = "x", int64(i), r
		first = append(first, r)
	}
	ty.Reset()
	for i := range 100 {
		r := ty.New()
		if r.name != "" || r.n != 0 || r.next != nil {
			t.Fatalf("object %d not zeroed after Reset", i)
		}
		if r != first[i] {
			t.Fatalf("object %d did not reuse its memory", i)
		}
	}
	ty.Free()
	wantFreed(t, "New", func() { ty.New() })
	wantFreed(t, "New", func() { ty.TryNew() })
	wantFreed(t, "New", func() { ty.MakeSlice(1, 1) })
	wantFreed(t, "New", func() { ty.MakeSlice(0, 0) })
	wantFreed(t, "Reset", ty.Reset)
	wantFreed(t, "Free", ty.Free)
}

func TestTyped_MakeSliceAcrossChunks(t *testing.T) {
	ty := arena.NewTyped[int64](arena.WithChunkSize(256)) // 32 elements
	seen := map[*int64]bool{}
	for i := range 200 {
		s := unsafe.Slice(ty.New(), 1)
		if i%3 == 0 {
			s = ty.MakeSlice(i%9, i%9)
		}
		for j := range s {
			if s[j] != 0 || seen[&s[j]] {
				t.Fatalf("element %d of allocation %d reused or not zero", j, i)
			}
			seen[&s[j]] = true
			s[j] = int64(i)
		}
	}
}

func TestAllocsPerRun(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	a := arena.NewArena()
	ty := arena.NewTyped[node]()
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"New", func() { arena.New[node](a) }},
		{"NewFlat", func() { arena.New[[4]int64](a) }},
		{"MakeSlice", func() { arena.MakeSlice[*node](a, 4, 8) }},
		{"CloneString", func() { arena.CloneString(a, "some text") }},
		{"Typed.New", func() { ty.New() }},
		{"Typed.MakeSlice", func() { ty.MakeSlice(2, 4) }},
	} {
		// Steady state: a batch then Reset, as a request loop does.
		batch := func() {
			for range 1000 {
				c.f()
			}
			a.Reset()
			ty.Reset()
		}
		batch()
		if n := testing.AllocsPerRun(20, batch); n != 0 {
			t.Errorf("%s: %v allocs per 1000", c.name, n)
		}
	}
}

// Typed.ReadStats only reads: called between allocations, or from another
// goroutine as memkit.Publish does, it never makes the arena hand an object
// out twice (issue 13 case 4: it moved the current chunk and back).
func TestTyped_ReadStatsOnlyReads(t *testing.T) {
	ty := arena.NewTyped[[4]uint64](arena.WithChunkSize(256))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var s memkit.Stats
		for {
			select {
			case <-stop:
				return
			default:
				ty.ReadStats(&s)
			}
		}
	}()
	var s memkit.Stats
	for cycle := range 200 {
		seen := map[*[4]uint64]bool{}
		for i := range 100 {
			p := ty.New()
			if seen[p] || *p != [4]uint64{} {
				close(stop)
				t.Fatalf("cycle %d: object %d handed out twice or not zeroed", cycle, i)
			}
			seen[p] = true
			p[0] = uint64(i) + 1
			ty.PublishStats()
			ty.ReadStats(&s)
			if s.LiveObjects != uint64(i)+1 || s.InUseBytes != 32*s.LiveObjects {
				close(stop)
				t.Fatalf("cycle %d: stats %v after %d objects", cycle, &s, i+1)
			}
		}
		ty.Reset()
	}
	close(stop)
	<-done
}
