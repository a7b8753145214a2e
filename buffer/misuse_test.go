package buffer_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// The misuse table of package buffer: each mistake a user can make with a
// Buffer, a FixedPool, a Slice or a Reader, what each build does about it,
// and a test that makes it beside another live buffer that must come
// through intact. memtest.RunMistakes runs it in the build in use and keeps
// docs/safety.md's misuse table equal to it. Each mistake is described here
// once; the tests after the table make the same mistakes with every way of
// getting a Buffer, and check what a table row cannot hold.

// witness is a live buffer of the pool beside the one a mistake concerns,
// filled with a pattern; its check reports whether the pattern is intact.
type witness struct {
	b    *buffer.Buffer
	want string
}

func newWitness(b *buffer.Buffer, seed int) witness {
	w := witness{b: b, want: fmt.Sprintf("witness %d: %x", seed, seed*0x9e37)}
	b.WriteString(w.want)
	return w
}

func (w witness) intact() error {
	if got := string(w.b.Bytes()); got != w.want {
		return fmt.Errorf("a live buffer holds %q, want %q", got, w.want)
	}
	return nil
}

// releaseCorrupts skips the row in the release build, whose table cell
// says the mistake is not caught and harms another allocation: only the
// checked build has a behaviour to assert.
func releaseCorrupts(t testing.TB) {
	if !checked.Enabled {
		t.Skip("not caught by the release build: see the row's release cell")
	}
}

const msgDouble = "memkit/buffer: double free"

// reported wraps a row's mistake so that, in the checked build, it also
// checks what the row's columns do not (see memtest.Reported): that the
// report's stacks start in the code that got (and, with freed, first
// freed) the buffer — the table's Setup, not the buffer package — and that
// its detail contains detail.
func reported(t testing.TB, freed bool, detail string, mistake func()) func() {
	return memtest.Reported(mistake, func(m *checked.Misuse) {
		checkStacks(t, m, "bufferMistakes", freed)
		if !strings.Contains(m.Detail, detail) {
			t.Errorf("report's detail %q; want it to contain %q", m.Detail, detail)
		}
	})
}

// checkStacks fails t unless m's allocation stack and, with freed, its
// first free's stack name fn, a function of the package's tests.
func checkStacks(t testing.TB, m *checked.Misuse, fn string, freed bool) {
	t.Helper()
	fn = "buffer_test." + fn
	if m.Alloc.Empty() || !strings.Contains(m.Alloc.String(), fn) {
		t.Errorf("report lacks the allocation by %s:\n%v", fn, m)
	}
	if freed && (m.Free.Empty() || !strings.Contains(m.Free.String(), fn)) {
		t.Errorf("report lacks the first free by %s:\n%v", fn, m)
	}
}

func bufferMistakes() []memtest.Mistake {
	return []memtest.Mistake{
		{
			Name:    "second Free of a Buffer",
			Release: "panic `memkit/buffer: double free` until the header is handed out again",
			Checked: "DoubleFree (headers are never reused)",
			Panic:   msgDouble, Op: "Free", Kind: checked.DoubleFree,
			Setup: func(t testing.TB) (func(), func() error) {
				p := mustPool(t)
				b := p.Get()
				var w witness
				if !checked.Enabled {
					w = newWitness(p.Get(), 1)
				}
				b.WriteString("mine")
				b.Free()
				if checked.Enabled {
					// Got after the Free, the witness takes b's header in
					// a release build; the checked build never reuses one
					// and catches the late Free all the same.
					w = newWitness(p.Get(), 1)
				}
				return reported(t, true, "", func() { b.Free() }), func() error {
					if err := b.Close(); err != buffer.ErrClosed {
						return fmt.Errorf("Close after the second Free = %v, want ErrClosed", err)
					}
					return w.intact()
				}
			},
		},
		{
			Name:    "second Close",
			Release: "returns `ErrClosed`, the pool unchanged",
			Checked: "the same",
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 2, 64)
				b, w := fp.Checkout(), newWitness(fp.Checkout(), 2)
				b.Close()
				return func() {
					if err := b.Close(); err != buffer.ErrClosed {
						t.Errorf("second Close = %v, want ErrClosed", err)
					}
				}, w.intact
			},
		},
		{
			Name:    "second Free of a FixedPool buffer",
			Release: "panic `memkit/buffer: double free`",
			Checked: "DoubleFree",
			Panic:   msgDouble, Op: "Free", Kind: checked.DoubleFree,
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 2, 64)
				b, w := fp.Checkout(), newWitness(fp.Checkout(), 3)
				b.Free()
				if checked.Enabled {
					// The buffer goes out and back three times more:
					// the checked build still knows b's header is stale.
					for range 3 {
						fp.Checkout().Close()
					}
				}
				return reported(t, true, "", func() { b.Free() }), func() error {
					if err := b.Close(); err != buffer.ErrClosed {
						return fmt.Errorf("Close after the second Free = %v, want ErrClosed", err)
					}
					return w.intact()
				}
			},
		},
		{
			Name:    "Close through a stale *Buffer after one more Checkout",
			Release: "returns `ErrClosed` (each buffer alternates two headers)",
			Checked: "the same (every checkout has a header of its own)",
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 1, 64)
				stale := fp.Checkout()
				stale.Close()
				w := newWitness(fp.Checkout(), 4)
				return func() {
					if err := stale.Close(); err != buffer.ErrClosed {
						t.Errorf("stale Close = %v, want ErrClosed", err)
					}
				}, w.intact
			},
		},
		{
			Name:    "Close through a stale *Buffer after two more Checkouts",
			Release: "not caught: the header serves the new owner, whose checkout it closes",
			Checked: "returns `ErrClosed`",
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 1, 64)
				stale := fp.Checkout()
				stale.Close()
				fp.Checkout().Close()
				cur := fp.Checkout()
				if !checked.Enabled && cur != stale {
					// The release cell says the stale *Buffer is the new
					// owner's header: the docs must change with this.
					t.Fatal("documented behaviour changed: the third checkout did not reuse the first's header")
				}
				releaseCorrupts(t)
				w := newWitness(cur, 5)
				return func() {
					if err := stale.Close(); err != buffer.ErrClosed {
						t.Errorf("stale Close = %v, want ErrClosed", err)
					}
				}, w.intact
			},
		},
		{
			Name:    "write through a Buffer after Free",
			Release: "not caught: the write takes fresh storage, never another buffer's",
			Checked: "StaleHandle",
			Op:      "WriteString", Kind: checked.StaleHandle,
			Setup: func(t testing.TB) (func(), func() error) {
				p := mustPool(t, buffer.WithDefaultSize(1000))
				b, w := p.Get(), newWitness(p.Get(), 6)
				b.WriteString("mine") // the idle header keeps this storage
				b.Free()
				return reported(t, true, "", func() { b.WriteString("late") }), func() error {
					// The next Get drops the storage the stale write
					// reached instead of handing it out.
					next := p.Get()
					defer next.Free()
					next.WriteString("next")
					if next.String() != "next" {
						return fmt.Errorf("the next Get's buffer holds %q, want %q", next.String(), "next")
					}
					return w.intact()
				}
			},
		},
		{
			Name:    "write through a FixedPool Buffer after Close",
			Release: "not caught: the buffer's next Checkout detaches the stale header, so the write takes fresh memory, never the next user's buffer",
			Checked: "StaleHandle",
			Op:      "Write", Kind: checked.StaleHandle,
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 1, 64)
				b := fp.Checkout()
				b.WriteString("abc")
				b.Close()
				w := newWitness(fp.Checkout(), 7) // the other header of the same storage
				return reported(t, true, "", func() { b.Write([]byte("late")) }), w.intact
			},
		},
		{
			Name:    "Free of a copied Buffer",
			Release: "not caught: the copy returns the original's storage",
			Checked: "ForeignFree",
			Op:      "Free", Kind: checked.ForeignFree,
			Setup: func(t testing.TB) (func(), func() error) {
				p := mustPool(t)
				b, w := p.Get(), newWitness(p.Get(), 8)
				b.WriteString("shared")
				cp := copyOf(b)
				return func() { cp.Free() }, func() error {
					if checked.Enabled && b.String() != "shared" {
						return fmt.Errorf("the original holds %q after its copy's Free, want %q", b.String(), "shared")
					}
					return w.intact()
				}
			},
		},
		{
			Name:    "write through a view of a FixedPool buffer after Close",
			Release: "not caught: the bytes land in the idle buffer",
			Checked: "UseAfterFree, with the stacks, at the Checkout that takes the buffer (or memkit.Leaks)",
			Op:      "Checkout", Kind: checked.UseAfterFree,
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 2, 64)
				b, w := fp.Checkout(), newWitness(fp.Checkout(), 9)
				b.WriteString("abc")
				view := b.Bytes()
				b.Close()
				return reported(t, true, "byte 1 of the freed block is 0x78", func() {
					view[1] = 'x'
					fp.Checkout()
				}), w.intact
			},
		},
		{
			Name:    "write past a FixedPool buffer through unsafe",
			Release: "not caught: the bytes land in the next buffer",
			Checked: "Overflow at Close (a 16-byte guard after each buffer)",
			Op:      "Close", Kind: checked.Overflow,
			Setup: func(t testing.TB) (func(), func() error) {
				releaseCorrupts(t)
				fp := mustFixed(t, 2, 64)
				b, w := fp.Checkout(), newWitness(fp.Checkout(), 10)
				b.WriteString("x")
				past := unsafe.Slice(unsafe.SliceData(b.Bytes()), b.Cap()+1)
				past[b.Cap()] = 1
				return reported(t, false, "byte 0 past the end of the 64-byte buffer", func() { b.Close() }), w.intact
			},
		},
		{
			Name:    "Truncate past the length",
			Release: "panic `memkit/buffer: Truncate out of range`",
			Checked: "the same",
			Panic:   "memkit/buffer: Truncate out of range",
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 2, 64)
				b, w := fp.Checkout(), newWitness(fp.Checkout(), 11)
				b.WriteString("abc")
				return func() { b.Truncate(4) }, w.intact
			},
		},
		{
			Name:    "Grow past what the system can serve",
			Release: "panic `bytes.ErrTooLarge` (`bytes.Buffer: too large`), asked of the kernel before anything is reserved, the Buffer unchanged; a Strict FixedPool buffer never reserves: nothing changes",
			Checked: "the same",
			Panic:   "bytes.Buffer: too large",
			Setup: func(t testing.TB) (func(), func() error) {
				p := mustPool(t)
				b, w := p.Get(), newWitness(p.Get(), 13)
				b.WriteString("mine")
				return func() { b.Grow(hostileSize) }, func() error {
					if b.String() != "mine" {
						return fmt.Errorf("the Buffer holds %q, want %q", b.String(), "mine")
					}
					return w.intact()
				}
			},
		},
		{
			Name:    "GetSize past what the system can serve",
			Release: "panic `bytes.ErrTooLarge`, asked of the kernel before anything is reserved",
			Checked: "the same",
			Panic:   "bytes.Buffer: too large",
			Setup: func(t testing.TB) (func(), func() error) {
				p := mustPool(t)
				w := newWitness(p.Get(), 14)
				return func() { p.GetSize(hostileSize) }, w.intact
			},
		},
		{
			Name:    "Slice.PushOwned of a buffer bytepool did not hand out",
			Release: "not caught: Slice.Free gives it to bytepool, which keeps it or counts a bad free",
			Checked: "ForeignFree",
			Op:      "PushOwned", Kind: checked.ForeignFree,
			Setup: func(t testing.TB) (func(), func() error) {
				var s buffer.Slice
				w := newWitness(buffer.Get(), 12)
				// Not from the heap: the checked build keeps the records of
				// buffers other tests leaked, and a heap slice could land where
				// one of those was collected and read as a re-slice of it.
				foreign := staticForeign[:]
				t.Cleanup(func() { w.b.Free() })
				return func() { s.PushOwned(foreign) }, w.intact
			},
		},
		{
			Name:    "Reader call with a negative count",
			Release: "panic `memkit/buffer: negative read count`",
			Checked: "the same",
			Panic:   "memkit/buffer: negative read count",
			Setup: func(t testing.TB) (func(), func() error) {
				s := buffer.NewSlice([]byte("abc"), []byte("def"))
				r := s.NewReader()
				r.Skip(2)
				return func() { r.Skip(-1) }, func() error {
					if b, err := r.ReadBytes(4); err != nil || string(b) != "cdef" {
						return fmt.Errorf("the Reader moved: %q, %v", b, err)
					}
					return nil
				}
			},
		},
	}
}

// TestMistakes runs the misuse table in the build in use: go test and go
// test -tags memkitdebug.
func TestMistakes(t *testing.T) {
	memtest.RunMistakes(t, "buffer", bufferMistakes())
}

// sources are the ways to get a Buffer: the default Pool's Get and
// GetSize, a FixedPool's Checkout, and a Checkout of a full FixedPool,
// which hands out a fresh buffer (a miss).
func sources(t *testing.T) map[string]func() *buffer.Buffer {
	fp := mustFixed(t, 2, 64)
	return map[string]func() *buffer.Buffer{
		"Get":      func() *buffer.Buffer { return buffer.Get() },
		"GetSize":  func() *buffer.Buffer { return buffer.GetSize(100) },
		"Checkout": fp.Checkout,
		"miss": func() *buffer.Buffer {
			full := mustFixed(t, 1, 64)
			full.Checkout()
			return full.Checkout()
		},
	}
}

// The table makes each Buffer mistake with one way of getting the Buffer;
// this test makes them with each of the sources, in both builds: a second
// Free, then a Close (ErrClosed in both builds); a Free and a Close of a
// copy; and every kind of call through a freed Buffer.
func TestMistakes_EverySource(t *testing.T) {
	const test = "TestMistakes_EverySource"
	for name, get := range sources(t) {
		t.Run("from="+name, func(t *testing.T) {
			b := get()
			b.WriteString("x")
			b.Free()
			if checked.Enabled {
				m := misuseOf(func() { b.Free() })
				memtest.CheckMisuse(t, m, "buffer", "Free", checked.DoubleFree, "", true)
				checkStacks(t, m, test, true)
			} else {
				memtest.CheckPanic(t, msgDouble, func() { b.Free() })
			}
			if err := b.Close(); err != buffer.ErrClosed {
				t.Fatalf("Close after Free = %v, want ErrClosed", err)
			}
			if !checked.Enabled {
				return // the release build catches neither a copy's Free nor a stale call
			}

			b = get()
			b.WriteString("x")
			cp := copyOf(b) // a copy shares, and would return, b's storage
			for _, op := range []string{"Free", "Close"} {
				m := misuseOf(func() {
					if op == "Free" {
						cp.Free()
					} else {
						cp.Close()
					}
				})
				memtest.CheckMisuse(t, m, "buffer", op, checked.ForeignFree, "", false)
			}
			if b.String() != "x" {
				t.Fatal("the copy's Free disturbed the original")
			}
			b.Free()

			for op, f := range map[string]func(){
				"Write":       func() { b.Write([]byte("x")) },
				"WriteString": func() { b.WriteString("x") },
				"WriteByte":   func() { b.WriteByte('x') },
				"Bytes":       func() { b.Bytes() },
				"Len":         func() { b.Len() },
				"String":      func() { _ = b.String() },
				"Reset":       func() { b.Reset() },
				"AppendInt":   func() { b.AppendInt(1, 10) },
				"ReadFrom":    func() { b.ReadFrom(strings.NewReader("x")) },
				"JSON":        func() { j := buffer.NewJSON(b); j.Int(1) },
			} {
				m := misuseOf(f)
				memtest.CheckMisuse(t, m, "buffer", op, checked.StaleHandle, "", false)
				checkStacks(t, m, test, true)
				if !strings.Contains(m.Error(), ": use of a Buffer after Free or Close\n") {
					t.Fatalf("%s: report %q", op, m.Error())
				}
			}
		})
	}
}

// A write through a view of a Pool buffer kept past Free lands in storage
// that bytepool holds in its quarantine in the checked build: bytepool
// reports it (memkit.Leaks here, or the Get that would hand it out). The
// release build does not catch it.
func TestMistakes_ViewOfAPoolBufferWrittenAfterFree(t *testing.T) {
	releaseCorrupts(t)
	bp, err := bytepool.New()
	if err != nil {
		t.Fatal(err)
	}
	p := mustPool(t, buffer.WithBytePool(bp))
	b := p.GetSize(100)
	b.WriteString("abc")
	view := b.Bytes()
	b.Free()
	view[0] = 'x'
	_, err = memkit.Leaks(bp)
	var m *checked.Misuse
	if !errors.As(err, &m) {
		t.Fatalf("Leaks = %v; want the write after free", err)
	}
	memtest.CheckMisuse(t, m, "bytepool", "memkit.Leaks", checked.UseAfterFree, "", true)
	checkStacks(t, m, "TestMistakes_ViewOfAPoolBufferWrittenAfterFree", true)
	view[0] = checked.PoisonByte
}

// The checked build's checks of Slice.PushOwned beyond the table's foreign
// buffer: a re-sliced buffer and one the Slice gave back already. The
// release build checks neither (Slice.Free hands them to bytepool).
func TestMistakes_PushOwnedMovedAndFreed(t *testing.T) {
	releaseCorrupts(t)
	b := bytepool.Get(96)
	var s buffer.Slice
	for _, seg := range [][]byte{b[16:], b[:0:64]} {
		memtest.CheckMisuse(t, misuseOf(func() { s.PushOwned(seg) }), "buffer", "PushOwned", checked.MovedFree, "", false)
	}
	s.PushOwned(b)
	s.Free()
	m := misuseOf(func() { s.PushOwned(b) })
	memtest.CheckMisuse(t, m, "buffer", "PushOwned", checked.DoubleFree, "", true)
	checkStacks(t, m, "TestMistakes_PushOwnedMovedAndFreed", true)
}

// Two copies of a Slice that owns a segment share its list of owned
// buffers, so the second Free finds nothing left to put back: no mistake,
// in either build.
func TestSlice_FreeOfACopyAfterTheOriginalsIsNoDoubleFree(t *testing.T) {
	var s buffer.Slice
	s.PushOwned(bytepool.Get(100))
	cp := s
	s.Free()
	if m := misuseOf(func() { cp.Free() }); m != nil {
		t.Fatalf("Free of a copy after the original's: %v", m)
	}
}

// memkit.Leaks lists the Buffers a Pool or a FixedPool (misses included)
// has out, with the stack of each Get or Checkout, in the checked build,
// and returns memkit.ErrNotChecked in a release build.
func TestLeaks(t *testing.T) {
	p := mustPool(t)
	kept := p.Get()
	p.Get().Free()
	fp := mustFixed(t, 1, 64)
	out, miss := fp.Checkout(), fp.Checkout()
	if !checked.Enabled {
		for _, src := range []memkit.StatsSource{p, fp, buffer.Default()} {
			if _, err := memkit.Leaks(src); !errors.Is(err, memkit.ErrNotChecked) {
				t.Fatalf("Leaks(%T) = %v; want ErrNotChecked", src, err)
			}
		}
		return
	}
	for _, tc := range []struct {
		src  memkit.StatsSource
		want []*buffer.Buffer
	}{{p, []*buffer.Buffer{kept}}, {fp, []*buffer.Buffer{out, miss}}} {
		leaks, err := memkit.Leaks(tc.src)
		if err != nil || len(leaks) != len(tc.want) {
			t.Fatalf("Leaks(%T) = %v, %v", tc.src, leaks, err)
		}
		for _, l := range leaks {
			found := false
			for _, b := range tc.want {
				found = found || l.Addr == uintptr(unsafe.Pointer(b))
			}
			if !found || l.Allocator != "buffer" || !strings.Contains(l.Stack, "buffer_test.TestLeaks") {
				t.Fatalf("leak %v", l)
			}
		}
	}
	kept.Free()
	out.Close()
	miss.Close()
	for _, src := range []memkit.StatsSource{p, fp} {
		if leaks, _ := memkit.Leaks(src); len(leaks) != 0 {
			t.Fatalf("Leaks(%T) after the Frees: %v", src, leaks)
		}
	}
	// The default Pool, behind buffer.Get, reports its own.
	d := buffer.Get()
	leaks, err := memkit.Leaks(buffer.Default())
	if err != nil || len(leaks) == 0 {
		t.Fatalf("Leaks(Default) = %v, %v", leaks, err)
	}
	d.Free()
}

// copyOf makes the copy of a Buffer that go vet reports in user code (a
// Buffer must not be copied), through reflect, so a test can make that
// mistake on purpose.
func copyOf(b *buffer.Buffer) *buffer.Buffer {
	cp := new(buffer.Buffer)
	reflect.ValueOf(cp).Elem().Set(reflect.ValueOf(b).Elem())
	return cp
}

// staticForeign is memory no allocator handed out and the heap never reuses:
// the foreign buffer of the PushOwned row.
var staticForeign [128]byte
