package arena_test

import (
	"errors"
	"slices"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/sysmem"
)

// flat24 is a pointer-free 24-byte type.
type flat24 [3]uint64

// ptrObj is a pointerful object of the model: where it is, and the value
// its pointer must lead to.
type ptrObj struct {
	p    *p16
	want int
}

// span is the memory of one live allocation, for the overlap check.
type span struct{ start, end uintptr }

// arenaModel is what the fuzz target expects of an arena: the live
// pointer-free blocks (patterned by memtest), the live pointerful objects,
// the strings cloned in, and the counters.
type arenaModel struct {
	bytes   *memtest.Model
	ptrs    []ptrObj
	strs    [][2]string // arena copy, expected content
	spans   []span
	objects uint64 // live arena objects
	allocs  uint64
	falls   uint64
	fails   uint64
	inUse   uint64 // bytes of live objects, padding excluded
}

func (m *arenaModel) reset() {
	m.bytes.Live = m.bytes.Live[:0]
	m.ptrs, m.strs, m.spans = m.ptrs[:0], m.strs[:0], m.spans[:0]
	m.objects, m.inUse = 0, 0
}

func spanOf[T any](s []T) span {
	if cap(s) == 0 {
		return span{}
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return span{p, p + uintptr(cap(s))*unsafe.Sizeof(s[0])}
}

func (m *arenaModel) verify(t *testing.T) {
	t.Helper()
	if err := m.bytes.VerifyAll(); err != nil {
		t.Fatal(err)
	}
	for i, o := range m.ptrs {
		if o.p.p == nil || *o.p.p != o.want {
			t.Fatalf("pointerful object %d lost its target", i)
		}
	}
	for i, s := range m.strs {
		if s[0] != s[1] {
			t.Fatalf("cloned string %d changed: %q, want %q", i, s[0], s[1])
		}
	}
	sp := slices.Clone(m.spans)
	slices.SortFunc(sp, func(a, b span) int { return int(int64(a.start - b.start)) })
	for i := 1; i < len(sp); i++ {
		if sp[i].start < sp[i-1].end && sp[i].start != sp[i].end {
			t.Fatalf("live allocations [%#x, %#x) and [%#x, %#x) overlap", sp[i-1].start, sp[i-1].end, sp[i].start, sp[i].end)
		}
	}
}

func (m *arenaModel) checkStats(t *testing.T, st *memkit.Stats, budget uint64) {
	t.Helper()
	if st.LiveObjects != m.objects || st.Allocs != m.allocs || st.HeapFallbacks != m.falls || st.Failures != m.fails {
		t.Fatalf("stats %+v; model objects %d allocs %d fallbacks %d failures %d", *st, m.objects, m.allocs, m.falls, m.fails)
	}
	if st.InUseBytes < m.inUse || st.InUseBytes > st.ReservedBytes {
		t.Fatalf("stats %+v; model in use %d", *st, m.inUse)
	}
	if budget > 0 && st.ReservedBytes > budget {
		t.Fatalf("reserved %d over the budget %d", st.ReservedBytes, budget)
	}
}

// FuzzArena decodes the input into New (pointerful, pointer-free, one
// byte, zero size), TryNew, MakeSlice, Append, CloneString, CloneBytes,
// Reset and Free operations on an Arena and checks them against a model:
// every allocation is zeroed, no two live allocations overlap, every byte
// written and every pointer stored reads back until Reset or Free, the
// arena's stats agree with the model and stay within the budget, and
// exhausting the budget fails or falls back as documented.
func FuzzArena(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 3, 10, 20, 4, 5, 9, 8, 0, 1, 11})
	f.Add([]byte{0x13, 0, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7, 3, 200, 1, 8, 0, 6, 5, 104, 101, 108, 108, 111})
	f.Add([]byte{0x22, 5, 3, 50, 0, 5, 5, 5, 1, 6, 4, 4, 4, 4, 9, 0, 0, 10, 8, 4, 90, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		cfg := ops.Byte()
		chunk := []int{64, 256, 1 << 10, 64 << 10}[cfg&3]
		opts := []arena.Option{arena.WithChunkSize(chunk)}
		var budget uint64
		if cfg&0x10 != 0 {
			budget = uint64(chunk) * uint64(2+cfg>>5)
			opts = append(opts, arena.WithBudget(int64(budget)))
		}
		a := arena.NewArena(opts...)
		m := &arenaModel{bytes: memtest.NewModel(0)}
		var st memkit.Stats
		fallback := func() bool { // whether the last call fell back to the heap
			a.ReadStats(&st)
			if st.HeapFallbacks > m.falls {
				m.falls++
				m.allocs++
				return true
			}
			m.allocs++
			m.objects++
			return false
		}
		addBytes := func(b []byte, wantLen int) {
			if len(b) != wantLen || !isZero(b[:cap(b)]) {
				t.Fatalf("allocation of %d bytes: len %d, zeroed %v", wantLen, len(b), isZero(b[:cap(b)]))
			}
			if cap(b) == 0 {
				m.allocs++
				m.objects++
				return
			}
			if !fallback() {
				m.inUse += uint64(cap(b))
				m.spans = append(m.spans, spanOf(b))
			}
			if _, err := m.bytes.Add(b); err != nil {
				t.Fatal(err)
			}
		}
		addPtrs := func(s []p16) {
			for i := range s {
				if s[i].p != nil {
					t.Fatal("pointerful allocation not zeroed")
				}
			}
			if !fallback() {
				m.inUse += uint64(cap(s)) * 16
				m.spans = append(m.spans, spanOf(s))
			}
			for i := range s {
				v := len(m.ptrs)
				s[i].p = &v
				m.ptrs = append(m.ptrs, ptrObj{&s[i], v})
			}
		}
		n := 0
		for ops.More() && n < 300 {
			n++
			switch op := ops.Byte() % 13; op {
			case 0: // New, pointerful
				addPtrs(unsafe.Slice(arena.New[p16](a), 1))
			case 1: // New, pointer-free
				p := arena.New[flat24](a)
				addBytes(unsafe.Slice((*byte)(unsafe.Pointer(p)), 24), 24)
			case 2: // New, one byte (unaligned neighbours)
				addBytes(unsafe.Slice(arena.New[byte](a), 1), 1)
			case 3: // MakeSlice of bytes
				c := int(ops.Byte()) * (1 + int(ops.Byte()&7))
				l := c / 2
				addBytes(arena.MakeSlice[byte](a, l, c), l)
			case 4: // MakeSlice, pointerful
				c := int(ops.Byte() % 80)
				s := arena.MakeSlice[p16](a, c, c)
				if c == 0 {
					m.allocs++
					m.objects++
					continue
				}
				addPtrs(s)
			case 5: // Append to a live byte block
				if len(m.bytes.Live) == 0 {
					continue
				}
				i := int(ops.Byte()) % len(m.bytes.Live)
				old, err := m.bytes.Remove(i)
				if err != nil {
					t.Fatal(err)
				}
				prefix := slices.Clone(old)
				extra := make([]byte, int(ops.Byte()%100))
				b := arena.Append(a, old, extra...)
				if !slices.Equal(b[:len(prefix)], prefix) || len(b) != len(prefix)+len(extra) {
					t.Fatal("Append lost the prefix")
				}
				// The old block now belongs to the new one, grown in place
				// or copied; track the new one only.
				j := slices.IndexFunc(m.spans, func(s span) bool { return s == spanOf(old) })
				if nb := spanOf(b); nb.start == spanOf(old).start {
					if j >= 0 {
						m.inUse += uint64(cap(b) - cap(old))
						m.spans[j] = nb
					}
				} else {
					if !fallback() {
						m.inUse += uint64(cap(b))
						m.spans = append(m.spans, nb)
					}
				}
				if _, err := m.bytes.Add(b); err != nil {
					t.Fatal(err)
				}
			case 6: // CloneString, CloneBytes
				k := int(ops.Byte() % 40)
				src := make([]byte, k)
				for i := range src {
					src[i] = ops.Byte()
				}
				s := arena.CloneString(a, string(src))
				if k > 0 && !fallback() {
					m.inUse += uint64(k)
					m.spans = append(m.spans, span{uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(s))) + uintptr(k)})
				}
				m.strs = append(m.strs, [2]string{s, string(src)})
				b := arena.CloneBytes(a, src)
				if !slices.Equal(b, src) || cap(b) != k {
					t.Fatalf("CloneBytes = %v, want %v", b, src)
				}
				switch {
				case k == 0:
					m.allocs++
					m.objects++
				case !fallback():
					m.inUse += uint64(k)
					m.spans = append(m.spans, spanOf(b))
				}
				if k > 0 {
					if _, err := m.bytes.Add(b); err != nil {
						t.Fatal(err)
					}
				}
			case 7: // TryNew
				p, err := arena.TryNew[p16](a)
				if err != nil {
					if !errors.Is(err, arena.ErrBudget) || budget == 0 || p != nil {
						t.Fatalf("TryNew: %v %p, budget %d", err, p, budget)
					}
					m.fails++
					continue
				}
				m.allocs++
				m.objects++
				m.inUse += 16
				m.spans = append(m.spans, spanOf(unsafe.Slice(p, 1)))
				if p.p != nil {
					t.Fatal("TryNew not zeroed")
				}
				v := len(m.ptrs)
				p.p = &v
				m.ptrs = append(m.ptrs, ptrObj{p, v})
			case 8: // Reset
				m.verify(t)
				a.Reset()
				m.reset()
				a.PublishStats()
				a.ReadStats(&st)
				m.checkStats(t, &st, budget)
			case 9: // Free, and a new arena
				m.verify(t)
				a.Free()
				a.PublishStats()
				a.ReadStats(&st)
				if st.ReservedBytes != 0 {
					t.Fatalf("reserved %d after Free", st.ReservedBytes)
				}
				wantFreed(t, "New", func() { arena.New[p16](a) })
				a = arena.NewArena(opts...)
				m.reset()
				m.allocs, m.falls, m.fails = 0, 0, 0
			case 10: // zero-size
				if arena.New[struct{}](a) == nil || arena.MakeSlice[[0]int](a, 3, 3) == nil {
					t.Fatal("zero-size allocation returned nil")
				}
				m.allocs += 2
				m.objects += 2
			case 11: // stats and contents
				m.verify(t)
				a.PublishStats()
				a.ReadStats(&st)
				m.checkStats(t, &st, budget)
			case 12: // a mistake of the misuse table, then every live allocation intact
				if injectMistake(t, a, ops.Byte()) {
					m.fails++
				}
				m.verify(t)
			}
		}
		m.verify(t)
		a.PublishStats()
		a.ReadStats(&st)
		m.checkStats(t, &st, budget)
	})
}

// injectMistake makes mistake k%8 of the misuse table that must leave a
// and every other arena as they were: a memkit panic (or report) at the
// call, or, for TryMakeSlice of more than the system has, ErrBudget
// (counted in a's Failures: it reports true).
func injectMistake(t *testing.T, a *arena.Arena, k byte) (failed bool) {
	t.Helper()
	switch k % 8 {
	case 0:
		memtest.CheckPanic(t, msgNegative, func() { arena.MakeSlice[p16](a, -1, 4) })
	case 1:
		memtest.CheckPanic(t, msgLenCap, func() { arena.MakeSlice[byte](a, 9, 8) })
	case 2: // more than the system has
		if tib64 == 0 || sysmem.Available(uint64(tib64)) {
			return false
		}
		if k&0x80 == 0 {
			memtest.CheckPanic(t, msgNoMemory, func() { arena.MakeSlice[byte](a, 0, tib64) })
			if !sysmem.Available(teraLen) { // an element type past the system's memory
				memtest.CheckPanic(t, msgNoMemory, func() { arena.New[tera](a) })
			}
			return false
		}
		if s, err := arena.TryMakeSlice[flat24](a, 1, tib64>>4); s != nil || !errors.Is(err, arena.ErrBudget) {
			t.Fatalf("TryMakeSlice of 96 TiB = %v, %v", s, err)
		}
		return true
	case 3: // a freed arena: used, freed again
		f := arena.NewArena()
		arena.New[p16](f)
		f.Free()
		wantFreed(t, "New", func() { arena.New[int](f) })
		wantFreed(t, "Free", f.Free)
	case 4: // Put of an arena not from the pool
		wantMisuse(t, msgForeign, "Put", checked.ForeignFree, func() { arena.NewPool().Put(a) })
	case 5: // second Put of an arena still in the pool
		p := arena.NewPool()
		b := p.Get()
		arena.New[p16](b)
		p.Put(b)
		wantMisuse(t, msgPutTwice, "Put", checked.DoubleFree, func() { p.Put(b) })
	case 6: // second Put after the next Get: only the checked build sees it
		if checked.Enabled {
			p := arena.NewPool()
			b := p.Get()
			p.Put(b)
			c := p.Get()
			w := newWitness(c, uint64(k))
			wantMisuse(t, "", "Put", checked.DoubleFree, func() { p.Put(b) })
			if err := w.intact(); err != nil {
				t.Fatal(err)
			}
			p.Put(c)
		}
	case 7: // use of an arena after Put: only the checked build sees it
		if checked.Enabled {
			p := arena.NewPool()
			b := p.Get()
			p.Put(b)
			wantMisuse(t, "", "New", checked.UseAfterFree, func() { arena.New[p16](b) })
		}
	}
	return false
}

// FuzzTyped decodes the input into New, TryNew, MakeSlice, Reset and Free
// operations on a Typed arena of a pointerful type and checks them against
// a model, as FuzzArena does.
func FuzzTyped(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 5, 2, 3, 0, 0, 4})
	f.Add([]byte{0x11, 0, 0, 0, 0, 0, 0, 2, 70, 1, 1, 1, 3, 0, 4, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		cfg := ops.Byte()
		chunk := []int{16, 160, 1 << 10, 64 << 10}[cfg&3]
		opts := []arena.Option{arena.WithChunkSize(chunk)}
		var budget uint64
		if cfg&0x10 != 0 {
			budget = uint64(chunk) * uint64(2+cfg>>5)
			opts = append(opts, arena.WithBudget(int64(budget)))
		}
		ty := arena.NewTyped[p16](opts...)
		m := &arenaModel{bytes: memtest.NewModel(0)}
		var st memkit.Stats
		add := func(s []p16, tried bool) {
			for i := range s {
				if s[i].p != nil {
					t.Fatal("not zeroed")
				}
			}
			ty.PublishStats()
			ty.ReadStats(&st)
			m.allocs++
			if !tried && st.HeapFallbacks > m.falls {
				m.falls++
			} else {
				m.objects++
				m.inUse += uint64(cap(s)) * 16
				m.spans = append(m.spans, spanOf(s))
			}
			for i := range s {
				v := len(m.ptrs)
				s[i].p = &v
				m.ptrs = append(m.ptrs, ptrObj{&s[i], v})
			}
		}
		n := 0
		for ops.More() && n < 400 {
			n++
			switch ops.Byte() % 6 {
			case 0, 1:
				add(unsafe.Slice(ty.New(), 1), false)
			case 2:
				c := int(ops.Byte() % 100)
				s := ty.MakeSlice(c/2, c)
				if len(s) != c/2 || cap(s) != c {
					t.Fatalf("MakeSlice(%d, %d): len %d cap %d", c/2, c, len(s), cap(s))
				}
				if c == 0 {
					m.allocs++
					m.objects++
					continue
				}
				add(s[:c], false)
			case 3:
				p, err := ty.TryNew()
				if err != nil {
					if !errors.Is(err, arena.ErrBudget) || budget == 0 {
						t.Fatalf("TryNew: %v", err)
					}
					m.fails++
					continue
				}
				add(unsafe.Slice(p, 1), true)
			case 4:
				m.verify(t)
				ty.Reset()
				m.reset()
			case 5:
				m.verify(t)
				ty.PublishStats()
				ty.ReadStats(&st)
				m.checkStats(t, &st, budget)
				if k := ops.Byte(); k%4 == 1 {
					// A mistake of the misuse table, then every live
					// object intact.
					switch k >> 2 % 4 {
					case 0:
						memtest.CheckPanic(t, msgNegative, func() { ty.MakeSlice(0, -1) })
					case 1:
						memtest.CheckPanic(t, msgLenCap, func() { ty.MakeSlice(5, 4) })
					case 2:
						if tib64 != 0 && !sysmem.Available(uint64(tib64)) {
							memtest.CheckPanic(t, msgNoMemory, func() { ty.MakeSlice(0, tib64>>4) })
						}
						if !sysmem.Available(teraLen) {
							memtest.CheckPanic(t, msgNoMemory, func() { arena.NewTyped[tera]().New() })
						}
					case 3:
						f := arena.NewTyped[p16]()
						f.New()
						f.Free()
						wantFreed(t, "Free", f.Free)
					}
					m.verify(t)
				} else if k%4 == 0 {
					ty.Free()
					wantFreed(t, "New", func() { ty.New() })
					ty = arena.NewTyped[p16](opts...)
					m.reset()
					m.allocs, m.falls, m.fails = 0, 0, 0
				}
			}
		}
		m.verify(t)
		ty.PublishStats()
		ty.ReadStats(&st)
		m.checkStats(t, &st, budget)
	})
}
