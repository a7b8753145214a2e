package buffer_test

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
	"unsafe"
	"weak"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

func mustFixed(t testing.TB, count, size int, opts ...buffer.FixedOption) *buffer.FixedPool {
	t.Helper()
	p, err := buffer.NewFixedPool(count, size, opts...)
	if err != nil {
		t.Fatalf("NewFixedPool: %v", err)
	}
	return p
}

// bigSize times 2^20 overflows an int on every platform.
const bigSize = int(^uint(0)>>1) / 1000

func TestNewFixedPool_InvalidParametersNameThem(t *testing.T) {
	for _, tc := range []struct {
		count, size int
		opts        []buffer.FixedOption
		want        string
	}{
		{0, 10, nil, "memkit/buffer: count 0 must be between 1 and 2^31-1"},
		{10, 0, nil, "memkit/buffer: size 0 must be at least 1"},
		{1 << 20, bigSize, nil, fmt.Sprintf("memkit/buffer: count 1048576 × size %d overflows an int", bigSize)},
		{1, 1, []buffer.FixedOption{buffer.WithOverflow(7)}, "memkit/buffer: Overflow 7 is neither Expand nor Strict"},
		{1, 1, []buffer.FixedOption{buffer.WithOverflow(buffer.Strict), nil}, "memkit/buffer: option 1 is nil"},
	} {
		p, err := buffer.NewFixedPool(tc.count, tc.size, tc.opts...)
		if p != nil || err == nil || err.Error() != tc.want {
			t.Errorf("NewFixedPool(%d, %d) = %v, %v; want %q", tc.count, tc.size, p, err, tc.want)
		}
	}
	if s := buffer.Strict.String() + buffer.Expand.String() + buffer.Overflow(9).String(); s != "StrictExpandOverflow(9)" {
		t.Errorf("Overflow names: %s", s)
	}
}

func TestFixedPool_CheckoutCloseReusesTheSameMemory(t *testing.T) {
	p := mustFixed(t, 4, 100)
	if p.Len() != 4 || p.Cap() != 4 || p.Size() != 100 {
		t.Fatalf("Len %d Cap %d Size %d", p.Len(), p.Cap(), p.Size())
	}
	seen := map[uintptr]bool{}
	var bs []*buffer.Buffer
	for range 4 {
		b := p.Checkout()
		if b.Len() != 0 || b.Cap() != 100 {
			t.Fatalf("checkout: len %d cap %d", b.Len(), b.Cap())
		}
		seen[b.Storage()] = true
		bs = append(bs, b)
	}
	if len(seen) != 4 || p.Len() != 0 {
		t.Fatalf("4 checkouts share storage (%d distinct) or Len %d", len(seen), p.Len())
	}
	for _, b := range bs {
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		b := p.Checkout()
		if !seen[b.Storage()] {
			t.Fatal("a checkout after Close got memory the pool did not reserve")
		}
		b.Close()
	}
	if p.Misses() != 0 || p.Len() != 4 {
		t.Fatalf("misses %d, Len %d", p.Misses(), p.Len())
	}
}

func TestFixedPool_EmptyPoolMissesWithoutBlocking(t *testing.T) {
	p := mustFixed(t, 2, 64)
	a, b := p.Checkout(), p.Checkout()
	c := p.Checkout() // empty: a fresh buffer
	if c.Cap() != 64 || p.Misses() != 1 {
		t.Fatalf("miss: cap %d, Misses %d", c.Cap(), p.Misses())
	}
	c.WriteString("miss")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != buffer.ErrClosed {
		t.Fatalf("second Close of a miss = %v", err)
	}
	if p.Len() != 0 {
		t.Fatalf("a miss went into the pool: Len %d", p.Len())
	}
	a.Close()
	b.Close()
	st := readStats(p)
	if st.Allocs != 3 || st.Frees != 3 || st.HeapFallbacks != 1 || st.LiveObjects != 0 || st.BadFrees != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestFixedPool_SecondCloseLeavesThePoolUnchanged(t *testing.T) {
	p := mustFixed(t, 3, 64)
	b := p.Checkout()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != buffer.ErrClosed {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
	if p.Len() != 3 {
		t.Fatalf("Len %d after a double Close; want 3", p.Len())
	}
	// Viki's bug: the double Close put the item in twice, so two later
	// checkouts shared it.
	x, y, z := p.Checkout(), p.Checkout(), p.Checkout()
	if x.Storage() == y.Storage() || y.Storage() == z.Storage() || x.Storage() == z.Storage() {
		t.Fatal("two checkouts share a buffer")
	}
	if p.Misses() != 0 {
		t.Fatal("a miss with three buffers idle")
	}
	x.Free()
	checkDoubleFree(t, func() { x.Free() })
	y.Close()
	z.Close()
	if st := readStats(p); st.BadFrees != 2 || st.Frees != 4 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestFixedPool_StaleCloseAfterRecheckoutIsRejected(t *testing.T) {
	p := mustFixed(t, 1, 64)
	old := p.Checkout()
	old.Close()
	cur := p.Checkout() // the same buffer, through its other header
	if old.Storage() == cur.Storage() && old == cur {
		t.Fatal("the re-checkout reused the stale header")
	}
	if err := old.Close(); err != buffer.ErrClosed {
		t.Fatalf("stale Close = %v, want ErrClosed", err)
	}
	cur.WriteString("mine")
	if cur.String() != "mine" || p.Len() != 0 {
		t.Fatalf("the stale Close disturbed the new owner: %q, Len %d", cur.String(), p.Len())
	}
	cur.Close()
}

func TestFixedPool_ConcurrentDoubleCloseAcceptsOne(t *testing.T) {
	p := mustFixed(t, 8, 64)
	for range 200 {
		b := p.Checkout()
		var ok atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if b.Close() == nil {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 1 {
			t.Fatalf("%d concurrent Closes succeeded, want 1", ok.Load())
		}
	}
	if p.Len() != 8 {
		t.Fatalf("Len %d, want 8", p.Len())
	}
}

func TestFixedPool_ExpandGrowsAndReturnsAtOriginalSize(t *testing.T) {
	p := mustFixed(t, 1, 16)
	b := p.Checkout()
	at := b.Storage()
	b.WriteString("0123456789")
	b.WriteString("0123456789") // past 16: expands
	if b.String() != "01234567890123456789" || !b.Owned() {
		t.Fatalf("after expansion: %q, owned %v", b.String(), b.Owned())
	}
	b.WriteString(strings.Repeat("z", 1000)) // grows again: counted once
	if p.Expansions() != 1 {
		t.Fatalf("Expansions %d, want 1", p.Expansions())
	}
	b.Close()
	b = p.Checkout()
	if b.Storage() != at || b.Cap() != 16 || b.Len() != 0 {
		t.Fatalf("after Close the buffer is not back at its size: cap %d len %d", b.Cap(), b.Len())
	}
	b.Close()
	if st := readStats(p); st.Grows != 1 || st.InUseBytes != 0 || st.ReservedBytes != 16 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestFixedPool_StrictRefusesWithoutTruncating(t *testing.T) {
	p := mustFixed(t, 1, 8, buffer.WithOverflow(buffer.Strict))
	b := p.Checkout()
	defer b.Close()
	b.WriteString("12345")
	if n, err := b.WriteString("6789"); n != 0 || err != io.ErrShortWrite || b.String() != "12345" {
		t.Fatalf("WriteString past the size = %d, %v, %q", n, err, b.String())
	}
	if n, err := b.Write([]byte("6789")); n != 0 || err != io.ErrShortWrite {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if err := b.AppendInt(1234, 10); err != io.ErrShortWrite || b.String() != "12345" {
		t.Fatalf("AppendInt = %v, %q", err, b.String())
	}
	if err := b.AppendQuote("long"); err != io.ErrShortWrite || b.String() != "12345" {
		t.Fatalf("AppendQuote = %v, %q", err, b.String())
	}
	if err := b.AppendTime(time.Unix(0, 0), time.RFC3339); err != io.ErrShortWrite {
		t.Fatalf("AppendTime = %v", err)
	}
	if b.Grow(4); b.Available() != 3 || b.Cap() != 8 || b.String() != "12345" {
		t.Fatalf("Grow past the size changed the buffer: available %d, cap %d, %q", b.Available(), b.Cap(), b.String())
	}
	if err := b.AppendInt(123, 10); err != nil || b.String() != "12345123" {
		t.Fatalf("AppendInt that fits = %v, %q", err, b.String())
	}
	if err := b.WriteByte('x'); err != io.ErrShortWrite || b.Len() != 8 || b.Cap() != 8 {
		t.Fatalf("WriteByte into a full buffer = %v", err)
	}
	b.Reset()
	j := buffer.NewJSON(b)
	j.BeginArray()
	j.Int(1234)
	j.Int(5678) // ",5678" passes 8 bytes
	if err := j.Err(); err != io.ErrShortWrite || b.String() != "[1234" {
		t.Fatalf("JSON past the size: %v, %q", err, b.String())
	}
	if st := readStats(p); st.Failures < 7 || st.Grows != 0 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestFixedPool_ReadFromExactSizeDoesNotExpand(t *testing.T) {
	body := strings.Repeat("b", 64)
	for _, ov := range []buffer.Overflow{buffer.Expand, buffer.Strict} {
		p := mustFixed(t, 1, 64, buffer.WithOverflow(ov))
		b := p.Checkout()
		n, err := b.ReadFrom(strings.NewReader(body))
		if n != 64 || err != nil || b.String() != body || p.Expansions() != 0 {
			t.Fatalf("%v: ReadFrom = %d, %v, expansions %d", ov, n, err, p.Expansions())
		}
		b.Reset()
		n, err = b.ReadFrom(strings.NewReader(body + "more"))
		switch ov {
		case buffer.Expand:
			if n != 68 || err != nil || b.String() != body+"more" || p.Expansions() != 1 {
				t.Fatalf("Expand: ReadFrom of 68 bytes = %d, %v, expansions %d", n, err, p.Expansions())
			}
		case buffer.Strict:
			if n != 64 || err != io.ErrShortWrite || b.String() != body {
				t.Fatalf("Strict: ReadFrom of 68 bytes = %d, %v, %d bytes", n, err, b.Len())
			}
		}
		b.Close()
	}
}

func TestFixedPool_ReadFromPassesReaderErrors(t *testing.T) {
	p := mustFixed(t, 1, 4)
	b := p.Checkout()
	defer b.Close()
	boom := errors.New("boom")
	n, err := b.ReadFrom(io.MultiReader(strings.NewReader("abcd"), errReader{boom}))
	if n != 4 || err != boom {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestFixedPool_CheckoutCloseAllocatesNothing(t *testing.T) {
	if race.Enabled || buffer.Debug {
		t.Skip("the race detector allocates; memkitdebug gives each checkout its own header")
	}
	p := mustFixed(t, 16, 4096)
	data := make([]byte, 1000)
	if n := testing.AllocsPerRun(1000, func() {
		b := p.Checkout()
		b.Write(data)
		b.Close()
	}); n != 0 {
		t.Fatalf("Checkout+Write+Close: %v allocs, want 0", n)
	}
}

// A FixedPool buffer's bookkeeping fills whole cache lines, so that the
// state words and headers of buffers in use on different Ps never share
// one (fixedEntryPad's arithmetic).
func TestFixedPool_EntryIsWholeCacheLines(t *testing.T) {
	if n := buffer.EntrySize(); n%64 != 0 || n > 192 {
		t.Fatalf("an entry is %d bytes; want a multiple of 64, at most 192", n)
	}
}

// TestFixedPool_Race checks out, fills, verifies and closes buffers on many
// goroutines at once, some buffers closed by another goroutine than the one
// that checked them out, with a pool small enough to miss. Run it with
// -race.
func TestFixedPool_Race(t *testing.T) {
	p := mustFixed(t, 6, 256)
	const workers = 6
	handoff := make(chan *buffer.Buffer, 4)
	var wg sync.WaitGroup
	rounds := 3000
	if testing.Short() {
		rounds = 500
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := memtest.NewModel(w)
			for i := range rounds {
				b := p.Checkout()
				b.Write(make([]byte, 1+(i*7+w)%300)) // some expand
				if _, err := m.Add(b.Bytes()); err != nil {
					t.Error(err)
					return
				}
				if _, err := m.Remove(0); err != nil {
					t.Error(err)
					return
				}
				if i%5 == 0 {
					select {
					case handoff <- b:
						continue
					default:
					}
				}
				if err := b.Close(); err != nil {
					t.Error(err)
					return
				}
				select {
				case o := <-handoff:
					if err := o.Close(); err != nil {
						t.Error(err)
						return
					}
				default:
				}
			}
		}()
	}
	wg.Wait()
	close(handoff)
	for b := range handoff {
		b.Close()
	}
	st := readStats(p)
	if p.Len() != 6 || st.LiveObjects != 0 || st.Allocs != workers*uint64(rounds) || st.Frees != st.Allocs {
		t.Fatalf("Len %d, stats %+v", p.Len(), st)
	}
	if st.BadFrees != 0 {
		t.Fatalf("bad frees: %d", st.BadFrees)
	}
}

// plainReader hides every method of its reader but Read, as an HTTP body
// or a net.Conn does.
type plainReader struct{ r io.Reader }

func (p plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

// TestFixedPool_ReadFromLosesNoByte reads bodies around the pool's size
// through a buffer that cannot keep them all (Strict, or Expand at its
// budget) and checks that what the buffer took followed by what is left in
// the reader is the whole body: no byte read past a full buffer is dropped
// (issue 13, case 8).
func TestFixedPool_ReadFromLosesNoByte(t *testing.T) {
	const size = 64
	pools := map[string][]buffer.FixedOption{
		"Strict":        {buffer.WithOverflow(buffer.Strict)},
		"Expand/budget": {buffer.WithBudget(1)},
	}
	readers := map[string]func(string) io.Reader{
		"ByteScanner": func(s string) io.Reader { return strings.NewReader(s) },
		"plain":       func(s string) io.Reader { return plainReader{strings.NewReader(s)} },
		"oneByte":     func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	}
	for pname, opts := range pools {
		for rname, mk := range readers {
			for _, n := range []int{size - 1, size, size + 1, size + 100} {
				t.Run(fmt.Sprintf("%s/%s/len=%d", pname, rname, n), func(t *testing.T) {
					p := mustFixed(t, 1, size, opts...)
					b := p.Checkout()
					defer b.Close()
					body := strings.Repeat("0123456789abcdef", 20)[:n]
					r := mk(body)
					got, err := b.ReadFrom(r)
					rest, rerr := io.ReadAll(r)
					if rerr != nil {
						t.Fatal(rerr)
					}
					if b.String()+string(rest) != body || got != int64(b.Len()) {
						t.Fatalf("ReadFrom = %d, %v: buffer %q + reader %q != body %q", got, err, b.String(), rest, body)
					}
					if b.Len() > size || p.Expansions() != 0 {
						t.Fatalf("buffer grew to %d bytes, %d expansions", b.Len(), p.Expansions())
					}
					// Only a reader that cannot unread may be stopped
					// at exactly the size with a byte-less error.
					wantErr := n > size || n == size && rname != "ByteScanner"
					if (err == io.ErrShortWrite) != wantErr || err != nil && err != io.ErrShortWrite {
						t.Fatalf("ReadFrom of %d bytes = %d, %v", n, got, err)
					}
				})
			}
		}
	}
}

// TestFixedPool_ReadFromSlidesAfterRead checks that a full buffer whose
// front was read makes room by sliding, neither expanding nor refusing.
func TestFixedPool_ReadFromSlidesAfterRead(t *testing.T) {
	p := mustFixed(t, 1, 8, buffer.WithOverflow(buffer.Strict))
	b := p.Checkout()
	defer b.Close()
	b.WriteString("abcdefgh")
	b.Read(make([]byte, 3))
	n, err := b.ReadFrom(plainReader{strings.NewReader("xy")})
	if n != 2 || err != nil || b.String() != "defghxy" {
		t.Fatalf("ReadFrom = %d, %v, %q", n, err, b.String())
	}
}

// TestFixedPool_ClosesUnderGCReportNoFalseDoubleFree checks out and closes
// buffers on several goroutines, dropping each header at its Close, while
// the GC runs all the time: a header's address freed by the GC and given to
// another goroutine's new header must not make that header's correct Close
// a "double free" (issue 13, case 5; the checked build tracks headers by
// address).
func TestFixedPool_ClosesUnderGCReportNoFalseDoubleFree(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	p := mustFixed(t, 4, 64)
	rounds := 4000
	if testing.Short() {
		rounds = 500
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				b := p.Checkout()
				b.WriteByte(byte(i))
				if err := b.Close(); err != nil {
					t.Error(err)
					return
				}
				if i%64 == 0 {
					runtime.GC()
				}
			}
		}()
	}
	wg.Wait()
}

// TestNewFixedPool_SizesTheMachineCannotServe asks for pools past what any
// machine, or this one, can give: an error, never the runtime's fatal "out
// of memory" or a makeslice panic (issue 13, case 6).
func TestNewFixedPool_SizesTheMachineCannotServe(t *testing.T) {
	if bits.UintSize < 64 {
		t.Skip("the sizes overflow an int on 32-bit platforms, tested above")
	}
	big := int(uint64(1) << 50 & uint64(^uint(0)>>1)) // 2^50 on 64-bit platforms
	cases := [][2]int{{1 << 30, 1 << 20}, {1<<31 - 1, 1 << 30}, {1, big}}
	if mode, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); runtime.GOOS == "linux" && err == nil && strings.TrimSpace(string(mode)) != "1" {
		cases = append(cases, [2]int{1 << 20, 1 << 20}) // 1 TiB: more than RAM and swap
	}
	for _, c := range cases {
		p, err := buffer.NewFixedPool(c[0], c[1])
		if p != nil || err == nil || !strings.Contains(err.Error(), "more than the system can give now") {
			t.Errorf("NewFixedPool(%d, %d) = %v, %v", c[0], c[1], p, err)
		}
	}
}

// TestFixedPool_StaleWriteDoesNotLendReservedMemoryToBytepool writes through a
// header after its Close (a mistake the release build does not catch),
// which grows the idle header into bytepool storage; the header's next
// checkout must still hold the buffer's reserved memory as its own, and its Close must
// not give that memory to bytepool, where another Get would share it.
func TestFixedPool_StaleWriteDoesNotLendReservedMemoryToBytepool(t *testing.T) {
	if buffer.Debug {
		t.Skip("the checked build panics at the stale write")
	}
	bp, err := bytepool.New()
	if err != nil {
		t.Fatal(err)
	}
	fp := mustFixed(t, 1, 4096, buffer.WithBytePool(bp))
	stale := fp.Checkout()
	stale.Close()
	stale.WriteString("late") // grows into bytepool storage
	fp.Checkout().Close()
	cur := fp.Checkout() // stale's header again
	if cur != stale {
		t.Fatal("documented header alternation changed: update the test")
	}
	reserved := cur.Storage()
	cur.WriteString("mine")
	cur.Close()
	for range 4 {
		if b := bp.Get(4096); uintptr(unsafe.Pointer(unsafe.SliceData(b[:1]))) == reserved {
			t.Fatal("bytepool hands out the FixedPool buffer's reserved memory")
		}
	}
}

// TestFixedPool_ClosedHeaderReachableUntilUntracked is issue 13's case 5
// made deterministic. The checked build tracks headers by address, so a
// closed header must stay reachable until the tracker has forgotten its
// address: were the GC free to collect it first, it could give the address
// to another goroutine's new header, whose Alloc the tracker would then
// take for the old one's and whose correct Close would report a double
// free. The hook runs in that window: it checks the buffer out again, as
// another goroutine would, and collects garbage; the closed header must
// survive. (Before dd5c715 the buffer was idle before the Close untracked the
// header, and the header was unreachable there: this test failed.)
func TestFixedPool_ClosedHeaderReachableUntilUntracked(t *testing.T) {
	if !buffer.Debug {
		t.Skip("the address tracker is the checked build's (-tags memkitdebug)")
	}
	p := mustFixed(t, 1, 64)
	b := p.Checkout()
	wp := weak.Make(b)
	var next *buffer.Buffer
	collected := false
	defer buffer.SetUntrackHook(func() {
		if next != nil {
			return // the hook's own Close
		}
		next = p.Checkout()
		runtime.GC()
		runtime.GC()
		collected = wp.Value() == nil
	})()
	if err := b.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if collected {
		t.Fatal("the closed header was collected before the tracker forgot its address: the GC could give it to a new header")
	}
	if next == nil {
		t.Fatal("the hook did not run")
	}
	if err := next.Close(); err != nil {
		t.Fatalf("the next checkout's Close = %v", err)
	}
}

// A checkout whose home buffer is out detours to another, and every
// respreadAfter (256) detours onto one buffer the pool changes the salt of
// its home hint, so that two goroutines whose stacks hash to one home are
// parted. One goroutine holding one buffer of two makes its own next
// checkouts (same call site, same hint) detour every time.
func TestFixedPool_DetoursChangeTheSalt(t *testing.T) {
	if buffer.Debug {
		t.Skip("the checked build's quarantine keeps a closed buffer out: the next checkout misses")
	}
	p, err := buffer.NewFixedPool(2, 64)
	if err != nil {
		t.Fatal(err)
	}
	held := p.Checkout()
	salt := p.Salt()
	for i := 1; i <= 256; i++ {
		b := p.Checkout()
		if b == held {
			t.Fatal("a checkout returned the buffer out")
		}
		b.Close()
		if got := p.Salt(); i < 256 && got != salt {
			t.Fatalf("the salt changed after %d detours, want 256", i)
		}
	}
	if p.Salt() == salt {
		t.Fatal("256 detours left the salt as it was")
	}
	held.Close()
	if n := p.Misses(); n != 0 {
		t.Fatalf("%d misses: a detour must take the idle buffer", n)
	}
}
