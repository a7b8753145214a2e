//go:build memkitdebug

package buffer_test

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
)

// The misuse suite of the checked build: one test per mistake, each
// asserting the report. A *Buffer is the handle: a stale one is caught
// whatever happened since, since the checked build never reuses a header.

// checkMisuse fails t unless m reports kind for op by allocator, with the
// stack of the allocation (by the test function named test) and, with
// freed, of the first free.
func checkMisuse(t *testing.T, m *checked.Misuse, allocator, op, kind, test string, freed bool) {
	t.Helper()
	if m == nil {
		t.Fatalf("no *checked.Misuse panic; want %q", kind)
	}
	if m.Allocator != allocator || m.Op != op || m.Kind != kind {
		t.Fatalf("misuse %s/%s/%s; want %s/%s/%s", m.Allocator, m.Op, m.Kind, allocator, op, kind)
	}
	msg := m.Error()
	if !strings.HasPrefix(msg, "memkit/"+allocator+": "+op+": "+kind+" at 0x") {
		t.Errorf("report starts %q", msg)
	}
	if test == "" {
		return
	}
	if !strings.Contains(msg, "allocated at:\n") || !strings.Contains(msg, "buffer_test."+test) {
		t.Errorf("report lacks the allocation in %s:\n%s", test, msg)
	}
	// The stacks start at the first frame outside the allocator's package:
	// the test, or the buffer package's code that called bytepool.
	if i := strings.Index(msg, "first freed at:\n"); freed && (i < 0 || !strings.Contains(msg[i:], "buffer_test."+test)) {
		t.Errorf("report lacks the first free in %s:\n%s", test, msg)
	}
}

// sources are the ways to get a Buffer that a pool tracks.
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

func TestMisuse_DoubleFree(t *testing.T) {
	for name, get := range sources(t) {
		t.Run("from="+name, func(t *testing.T) {
			b := get()
			b.WriteString("x")
			b.Free()
			checkMisuse(t, misuseOf(func() { b.Free() }), "buffer", "Free", checked.DoubleFree, "TestMisuse_DoubleFree", true)
			// A second Close is no mistake: it reports ErrClosed.
			if err := b.Close(); err != buffer.ErrClosed {
				t.Fatalf("Close after Free = %v", err)
			}
		})
	}
}

func TestMisuse_LateFreeAfterReuse(t *testing.T) {
	// The release build catches a second Free only until the header is
	// handed out again; the checked build never reuses one.
	p := mustPool(t)
	old := p.Get()
	old.Free()
	cur := p.Get()
	cur.WriteString("mine")
	checkMisuse(t, misuseOf(func() { old.Free() }), "buffer", "Free", checked.DoubleFree, "TestMisuse_LateFreeAfterReuse", true)
	if cur.String() != "mine" {
		t.Fatal("the late Free disturbed the new owner")
	}
	cur.Free()

	fp := mustFixed(t, 1, 64)
	stale := fp.Checkout()
	stale.Close()
	for range 3 {
		fp.Checkout().Close()
	}
	now := fp.Checkout()
	checkMisuse(t, misuseOf(func() { stale.Free() }), "buffer", "Free", checked.DoubleFree, "TestMisuse_LateFreeAfterReuse", true)
	if err := stale.Close(); err != buffer.ErrClosed {
		t.Fatalf("stale Close = %v", err)
	}
	now.Close()
}

func TestMisuse_ForeignFree(t *testing.T) {
	for name, get := range sources(t) {
		t.Run("from="+name, func(t *testing.T) {
			b := get()
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
				checkMisuse(t, m, "buffer", op, checked.ForeignFree, "", false)
			}
			if b.String() != "x" {
				t.Fatal("the copy's Free disturbed the original")
			}
			b.Free()
		})
	}
}

func TestMisuse_StaleHandle(t *testing.T) {
	for name, get := range sources(t) {
		t.Run("from="+name, func(t *testing.T) {
			b := get()
			b.WriteString("x")
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
				checkMisuse(t, m, "buffer", op, checked.StaleHandle, "TestMisuse_StaleHandle", true)
				if !strings.Contains(m.Error(), ": use of a Buffer after Free or Close\n") {
					t.Fatalf("%s: report %q", op, m.Error())
				}
			}
		})
	}
}

func TestMisuse_WriteAfterFree(t *testing.T) {
	t.Run("from=Checkout", func(t *testing.T) {
		fp := mustFixed(t, 1, 64)
		b := fp.Checkout()
		b.WriteString("abc")
		view := b.Bytes()
		b.Close()
		view[1] = 'x' // through a view kept past Close
		m := misuseOf(func() { fp.Checkout() })
		checkMisuse(t, m, "buffer", "Checkout", checked.UseAfterFree, "TestMisuse_WriteAfterFree", true)
		if !strings.Contains(m.Detail, "byte 1 of the freed block is 0x78") {
			t.Fatalf("report: %v", m)
		}
	})
	t.Run("from=Get", func(t *testing.T) {
		// A Pool's storage is bytepool's, which reports the write when it
		// hands the storage out again.
		bp, err := bytepool.New(bytepool.WithShards(1))
		if err != nil {
			t.Fatal(err)
		}
		p := mustPool(t, buffer.WithBytePool(bp))
		b := p.GetSize(100)
		b.WriteString("abc")
		view := b.Bytes()
		b.Free()
		view[0] = 'x'
		// bytepool holds the storage in its quarantine, and memkit.Leaks
		// checks it.
		_, err = memkit.Leaks(bp)
		var m *checked.Misuse
		if !errors.As(err, &m) {
			t.Fatalf("Leaks = %v; want the write after free", err)
		}
		checkMisuse(t, m, "bytepool", "memkit.Leaks", checked.UseAfterFree, "TestMisuse_WriteAfterFree", true)
		view[0] = checked.PoisonByte
	})
}

func TestMisuse_Overflow(t *testing.T) {
	// A write past a FixedPool buffer's capacity (only unsafe code can make
	// one) lands in the guard bytes after it and is reported at Close.
	fp := mustFixed(t, 2, 64)
	b := fp.Checkout()
	b.WriteString("x")
	past := unsafe.Slice(unsafe.SliceData(b.Bytes()), b.Cap()+1)
	past[b.Cap()] = 1
	m := misuseOf(func() { b.Close() })
	checkMisuse(t, m, "buffer", "Close", checked.Overflow, "TestMisuse_Overflow", false)
	if !strings.Contains(m.Detail, "byte 0 past the end of the 64-byte buffer") {
		t.Fatalf("report: %v", m)
	}
}

func TestMisuse_SliceOwnedSegments(t *testing.T) {
	b := bytepool.Get(96)
	var s buffer.Slice
	for _, tc := range []struct {
		seg  []byte
		kind string
	}{
		{b[16:], checked.MovedFree},
		{b[:0:64], checked.MovedFree},
		{make([]byte, 128), checked.ForeignFree},
	} {
		m := misuseOf(func() { s.PushOwned(tc.seg) })
		checkMisuse(t, m, "buffer", "PushOwned", tc.kind, "", false)
	}
	s.PushOwned(b)
	s.Free()
	checkMisuse(t, misuseOf(func() { s.PushOwned(b) }), "buffer", "PushOwned", checked.DoubleFree, "TestMisuse_SliceOwnedSegments", true)
	// Two copies of a Slice that owns a segment share its list of owned
	// buffers, so the second Free finds nothing left to put back.
	s.PushOwned(bytepool.Get(100))
	cp := s
	s.Free()
	if m := misuseOf(func() { cp.Free() }); m != nil {
		t.Fatalf("Free of a copy after the original's: %v", m)
	}
}

func TestMisuse_Leak(t *testing.T) {
	p := mustPool(t)
	kept := p.Get()
	p.Get().Free()
	fp := mustFixed(t, 1, 64)
	out, miss := fp.Checkout(), fp.Checkout()
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
			if !found || l.Allocator != "buffer" || !strings.Contains(l.Stack, "buffer_test.TestMisuse_Leak") {
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
