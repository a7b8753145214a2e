package buffer_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/clock"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

func mustPool(t testing.TB, opts ...buffer.PoolOption) *buffer.Pool {
	t.Helper()
	p, err := buffer.NewPool(opts...)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	return p
}

// checkDoubleFree fails t unless f panics as a second Free does: with
// "memkit/buffer: double free" in the release build, with a report of a
// double free in the checked build.
func checkDoubleFree(t *testing.T, f func()) {
	t.Helper()
	if !checked.Enabled {
		memtest.CheckPanic(t, "memkit/buffer: double free", f)
		return
	}
	if m := misuseOf(f); m == nil || m.Allocator != "buffer" || m.Op != "Free" || m.Kind != checked.DoubleFree {
		t.Fatalf("second Free: misuse %v; want a double free", m)
	}
}

// misuseOf runs f and returns the *checked.Misuse it panicked with, or nil
// if it returned; any other panic goes on.
func misuseOf(f func()) (m *checked.Misuse) {
	defer func() {
		if r := recover(); r != nil {
			var ok bool
			if m, ok = r.(*checked.Misuse); !ok {
				panic(r)
			}
		}
	}()
	f()
	return nil
}

// checkPutAgainPanics fails t unless b, a bytepool buffer that should be
// idle in the default pool, is refused as a double free: the release build
// sees the idle mark, the checked build its quarantine. It is how a test
// checks a buffer went back, now that the default pool's Frees are an
// estimate.
func checkPutAgainPanics(t *testing.T, b []byte) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		var m *checked.Misuse
		if err, ok := r.(error); ok && errors.As(err, &m) && m.Kind == checked.DoubleFree {
			return
		}
		if r != "memkit/bytepool: double free" {
			t.Fatalf("a second Put of a buffer given back: panic %v; want a double free", r)
		}
	}()
	bytepool.Put(b)
}

func readStats(s memkit.StatsSource) memkit.Stats {
	var st memkit.Stats
	s.ReadStats(&st)
	return st
}

func TestNewPool_InvalidOptionsNameTheOption(t *testing.T) {
	for _, tc := range []struct {
		opts []buffer.PoolOption
		want string
	}{
		{[]buffer.PoolOption{buffer.WithDefaultSize(0)}, "memkit/buffer: DefaultSize 0 must be between 1 and 1048576"},
		{[]buffer.PoolOption{buffer.WithDefaultSize(2 << 20)}, "memkit/buffer: DefaultSize 2097152 must be between 1 and 1048576"},
		{[]buffer.PoolOption{nil}, "memkit/buffer: option 0 is nil"},
	} {
		p, err := buffer.NewPool(tc.opts...)
		if p != nil || err == nil || err.Error() != tc.want {
			t.Errorf("NewPool = %v, %v; want error %q", p, err, tc.want)
		}
	}
}

// TestOptions_EachConstructorTakesOnlyWhatItReads checks the option types:
// an option a constructor does not read is not of its option type, so the
// compiler refuses it (issue 17).
func TestOptions_EachConstructorTakesOnlyWhatItReads(t *testing.T) {
	for _, tc := range []struct {
		name        string
		opt         any
		pool, fixed bool
	}{
		{"WithBytePool", buffer.WithBytePool(nil), true, true},
		{"WithBudget", buffer.WithBudget(1), true, true},
		{"WithBudgetAlert", buffer.WithBudgetAlert(1, func(int64, bool) {}), true, true},
		{"WithDefaultSize", buffer.WithDefaultSize(1), true, false},
		{"WithOverflow", buffer.WithOverflow(buffer.Strict), false, true},
	} {
		_, pool := tc.opt.(buffer.PoolOption)
		_, fixed := tc.opt.(buffer.FixedOption)
		if pool != tc.pool || fixed != tc.fixed {
			t.Errorf("%s: a PoolOption %v, a FixedOption %v; want %v, %v", tc.name, pool, fixed, tc.pool, tc.fixed)
		}
	}
}

func TestDefaultPool_IsValid(t *testing.T) {
	if buffer.Default() == nil || buffer.Default().BytePool() != bytepool.Default() {
		t.Fatal("the default pool does not share bytepool.Default")
	}
}

func TestBuffer_BehavesLikeBytesBuffer(t *testing.T) {
	var want bytes.Buffer
	b := buffer.Get()
	defer b.Free()
	check := func(step string) {
		t.Helper()
		if b.Len() != want.Len() || !bytes.Equal(b.Bytes(), want.Bytes()) || b.String() != want.String() {
			t.Fatalf("after %s: %q (len %d), want %q", step, b.Bytes(), b.Len(), want.Bytes())
		}
	}
	b.WriteString("hello, ")
	want.WriteString("hello, ")
	b.Write([]byte("world"))
	want.Write([]byte("world"))
	b.WriteByte('!')
	want.WriteByte('!')
	check("writes")
	p1, p2 := make([]byte, 5), make([]byte, 5)
	n1, e1 := b.Read(p1)
	n2, e2 := want.Read(p2)
	if n1 != n2 || e1 != e2 || !bytes.Equal(p1, p2) {
		t.Fatalf("Read = %d %v %q; want %d %v %q", n1, e1, p1, n2, e2, p2)
	}
	check("Read")
	b.Truncate(3)
	want.Truncate(3)
	check("Truncate")
	big := strings.Repeat("x", 10000)
	b.WriteString(big)
	want.WriteString(big)
	check("growth")
	var w1, w2 bytes.Buffer
	m1, _ := b.WriteTo(&w1)
	m2, _ := want.WriteTo(&w2)
	if m1 != m2 || w1.String() != w2.String() {
		t.Fatalf("WriteTo = %d, want %d", m1, m2)
	}
	check("WriteTo")
	if n, err := b.Read(p1); n != 0 || err != io.EOF {
		t.Fatalf("Read of an empty buffer = %d, %v", n, err)
	}
	if n, err := b.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) of an empty buffer = %d, %v", n, err)
	}
	r1, _ := b.ReadFrom(strings.NewReader(big))
	r2, _ := want.ReadFrom(strings.NewReader(big))
	if r1 != r2 {
		t.Fatalf("ReadFrom = %d, want %d", r1, r2)
	}
	check("ReadFrom")
	b.Reset()
	want.Reset()
	check("Reset")
}

func TestBuffer_ZeroValueIsUsableAndReusable(t *testing.T) {
	var b buffer.Buffer
	b.WriteString("abc")
	if b.String() != "abc" || !b.Owned() {
		t.Fatalf("zero Buffer after a write: %q, owned %v", b.String(), b.Owned())
	}
	b.Free()
	if b.Len() != 0 || b.Cap() != 0 {
		t.Fatalf("after Free: len %d cap %d", b.Len(), b.Cap())
	}
	b.Free() // nothing to free: no panic
	b.WriteString("again")
	if err := b.Close(); err != nil || b.Len() != 0 {
		t.Fatalf("Close of a zero Buffer = %v", err)
	}
	var nb *buffer.Buffer
	if nb.String() != "<nil>" {
		t.Fatal("nil Buffer String")
	}
}

func TestBuffer_Panics(t *testing.T) {
	b := buffer.Get()
	b.WriteString("abc")
	memtest.CheckPanic(t, "memkit/buffer: Truncate out of range", func() { b.Truncate(-1) })
	memtest.CheckPanic(t, "memkit/buffer: negative size", func() { b.Grow(-1) })
	memtest.CheckPanic(t, "memkit/buffer: negative size", func() { buffer.GetSize(-1) })
	memtest.CheckPanic(t, "memkit/buffer: reader returned more bytes than the slice it was given holds", func() { b.ReadFrom(badReader{}) })
	b.Free()
}

type badReader struct{}

func (badReader) Read(p []byte) (int, error) { return len(p) + 1, nil }

func TestBuffer_CloseTwiceReturnsErrClosed(t *testing.T) {
	b := buffer.Get()
	b.WriteString("x")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != buffer.ErrClosed {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
}

func TestBuffer_GetSizeAndGrowReserveRoom(t *testing.T) {
	b := buffer.GetSize(1000)
	defer b.Free()
	if b.Len() != 0 || b.Cap() < 1000 {
		t.Fatalf("GetSize(1000): len %d cap %d", b.Len(), b.Cap())
	}
	b.WriteString("abc")
	if b.Grow(5000); b.Available() < 5000 || b.Cap()-b.Len() < 5000 || b.String() != "abc" {
		t.Fatalf("Grow: available %d, cap %d, %q", b.Available(), b.Cap(), b.String())
	}
	at := b.Storage()
	b.Write(make([]byte, 5000))
	if b.Storage() != at {
		t.Fatal("a write within Grow's room moved the contents")
	}
	if e := buffer.GetSize(0); e.Cap() != 0 {
		t.Fatalf("GetSize(0) took storage: cap %d", e.Cap())
	}
}

func TestBuffer_SlidesReadBytesInsteadOfGrowing(t *testing.T) {
	b := buffer.GetSize(1024)
	defer b.Free()
	c := b.Cap()
	b.Write(make([]byte, c))
	io.CopyN(io.Discard, b, int64(c-10))
	b.Write(make([]byte, 100)) // 110 bytes fit in half the storage: slide
	if b.Cap() != c || b.Len() != 110 {
		t.Fatalf("cap %d len %d; want the storage of %d kept", b.Cap(), b.Len(), c)
	}
}

func TestBuffer_Appenders(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 123000000, time.UTC)
	for _, tc := range []struct {
		name string
		do   func(b *buffer.Buffer) error
		want string
	}{
		{"int", func(b *buffer.Buffer) error { return b.AppendInt(-1234567890123, 10) }, "-1234567890123"},
		{"intmin", func(b *buffer.Buffer) error { return b.AppendInt(math.MinInt64, 10) }, strconv.FormatInt(math.MinInt64, 10)},
		{"inthex", func(b *buffer.Buffer) error { return b.AppendInt(-255, 16) }, "-ff"},
		{"intbin", func(b *buffer.Buffer) error { return b.AppendInt(math.MinInt64, 2) }, strconv.FormatInt(math.MinInt64, 2)},
		{"uint", func(b *buffer.Buffer) error { return b.AppendUint(math.MaxUint64, 10) }, "18446744073709551615"},
		{"uint36", func(b *buffer.Buffer) error { return b.AppendUint(math.MaxUint64, 36) }, strconv.FormatUint(math.MaxUint64, 36)},
		{"float", func(b *buffer.Buffer) error { return b.AppendFloat(3.25, 'g', -1, 64) }, "3.25"},
		{"floatlong", func(b *buffer.Buffer) error { return b.AppendFloat(1e300, 'f', 2, 64) }, strconv.FormatFloat(1e300, 'f', 2, 64)},
		{"bool", func(b *buffer.Buffer) error { return b.AppendBool(false) }, "false"},
		{"quote", func(b *buffer.Buffer) error { return b.AppendQuote("a\"b\n\xff☺") }, strconv.Quote("a\"b\n\xff☺")},
		{"time", func(b *buffer.Buffer) error { return b.AppendTime(now, time.RFC3339Nano) }, "2024-05-06T07:08:09.123Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, prefix := range []int{0, 1, 60, 1000} {
				b := buffer.Get()
				pre := strings.Repeat("p", prefix)
				b.WriteString(pre)
				if err := tc.do(b); err != nil {
					t.Fatal(err)
				}
				if got := b.String(); got != pre+tc.want {
					t.Fatalf("prefix %d: got %q, want %q", prefix, got[prefix:], tc.want)
				}
				b.Free()
			}
		})
	}
}

func TestAppendDec_MatchesStrconv(t *testing.T) {
	check := func(u uint64) {
		if got, want := string(buffer.AppendDec(nil, u)), strconv.FormatUint(u, 10); got != want {
			t.Fatalf("AppendDec(%d) = %q", u, got)
		}
	}
	for p := uint64(1); p != 0 && p < math.MaxUint64/10; p *= 10 {
		for _, d := range []uint64{0, 1, 2, 9, 10, 11, 99, 100} {
			check(p - 1 + d)
			if p > d {
				check(p - d)
			}
		}
	}
	for i := range uint64(100000) {
		check(i)
	}
	check(math.MaxUint64)
	check(math.MaxUint64 - 1)
	check(1 << 63)
}

func TestPool_CalibratesDefaultSize(t *testing.T) {
	p := mustPool(t)
	if p.DefaultSize() != 0 {
		t.Fatalf("DefaultSize before any Free = %d", p.DefaultSize())
	}
	payload := make([]byte, 3000)
	use := func(n int) {
		for range n {
			b := p.Get()
			b.Write(payload)
			b.Free()
		}
	}
	use(2000)
	if got := p.DefaultSize(); got != 4096 {
		t.Fatalf("DefaultSize after writing 3000 bytes = %d, want 4096", got)
	}
	b := p.Get()
	b.WriteByte(1)
	if b.Cap() < 4096 {
		t.Fatalf("first write took %d bytes; want the default 4096", b.Cap())
	}
	b.Free()
	payload = payload[:100]
	use(20000)
	if got := p.DefaultSize(); got != 128 {
		t.Fatalf("DefaultSize after switching to 100-byte buffers = %d, want 128", got)
	}
}

func TestPool_WithDefaultSizeIsFixed(t *testing.T) {
	p := mustPool(t, buffer.WithDefaultSize(10000))
	b := p.Get()
	b.WriteByte(1)
	if b.Cap() < 10000 || p.DefaultSize() != 10000 {
		t.Fatalf("cap %d, DefaultSize %d; want 10000", b.Cap(), p.DefaultSize())
	}
	b.Free()
	// Short Buffers, past several calibrations' worth of samples, leave it.
	for range 4096 {
		b := p.Get()
		b.WriteByte(1)
		b.Free()
	}
	if p.DefaultSize() != 10000 {
		t.Fatalf("DefaultSize %d after 4096 one-byte Buffers; want 10000", p.DefaultSize())
	}
}

func TestPool_ReadStatsCountsStorage(t *testing.T) {
	p := mustPool(t, buffer.WithDefaultSize(1000))
	b1, b2 := p.Get(), p.Get()
	b1.WriteString("x")
	b2.Write(make([]byte, 5000)) // one storage, no growth: the first write takes what it needs
	st := readStats(p)
	if st.LiveObjects != 2 || st.Allocs != 2 || st.InUseBytes < 1000+5000 {
		t.Fatalf("stats with two live buffers: %+v", st)
	}
	b2.Write(make([]byte, 20000)) // grows: a second storage, the first returned
	b1.Free()
	b2.Free()
	st = readStats(p)
	if st.LiveObjects != 0 || st.Allocs != 3 || st.Frees != 3 {
		t.Fatalf("stats after Free: %+v", st)
	}
	if p.BytePool() == nil {
		t.Fatal("no BytePool")
	}
}

// Storage a GetSize took is kept by the idle header as a first write's is,
// and counted the same way: given back on every Free, taken on every reuse
// (the header asks whether its storage is in the count's sample when
// GetSize takes it, not at each Free).
func TestPool_IdleHeaderKeepsGetSizeStorage(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build never reuses a header")
	}
	p := mustPool(t, buffer.WithDefaultSize(1000))
	for i := range 100 {
		b := p.GetSize(1000)
		b.WriteByte(byte(i))
		if st := readStats(p); st.LiveObjects != 1 || st.Allocs != st.Frees+1 {
			t.Fatalf("GetSize %d, before its Free: %+v", i, st)
		}
		b.Free()
	}
	st := readStats(p)
	if st.LiveObjects != 0 || st.Allocs != st.Frees || st.Allocs < 100 {
		t.Fatalf("after 100 GetSize+Free: %+v", st)
	}
}

func TestPool_IdleHeaderKeepsItsStorage(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build never reuses a header")
	}
	p := mustPool(t, buffer.WithDefaultSize(1000))
	data := make([]byte, 1000)
	for range 100 {
		b := p.Get()
		b.Write(data)
		b.Free()
	}
	// Storage kept by idle headers counts as given back.
	st := readStats(p)
	if st.LiveObjects != 0 || st.Allocs != st.Frees || st.Allocs < 100 {
		t.Fatalf("after 100 Get+Write+Free: %+v", st)
	}
}

func TestBuffer_HotPathsAllocateNothing(t *testing.T) {
	p := mustPool(t, buffer.WithDefaultSize(4096))
	data := make([]byte, 100)
	warm := p.Get()
	warm.Write(data)
	warm.Free()
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Get+Write+Free", func() {
			b := p.Get()
			b.Write(data)
			b.WriteString("abc")
			b.WriteByte('x')
			b.Free()
		}},
		{"appenders", func() {
			b := p.Get()
			b.AppendInt(-42, 10)
			b.AppendUint(42, 16)
			b.AppendFloat(1.5, 'g', -1, 64)
			b.AppendBool(true)
			b.AppendQuote("q")
			b.AppendTime(time.Unix(0, 0).UTC(), time.RFC3339)
			b.Free()
		}},
		{"GetSize+Read", func() {
			b := p.GetSize(200)
			b.Write(data)
			var tmp [10]byte
			b.Read(tmp[:])
			b.Free()
		}},
		{"bytes.Buffer's byte and rune methods", func() {
			b := p.Get()
			b.WriteRune('é')
			b.WriteRune('x')
			b.Write(b.AvailableBuffer()[:0])
			b.Write(append(b.AvailableBuffer(), "abc\n"...))
			b.ReadRune()
			b.UnreadRune()
			b.ReadByte()
			b.UnreadByte()
			b.Peek(3)
			b.Next(2)
			if b.Available() == 0 {
				panic("no room")
			}
			b.Free()
		}},
	} {
		if race.Enabled || buffer.Debug {
			t.Skip("the race detector allocates; memkitdebug never reuses a header")
		}
		if n := testing.AllocsPerRun(100, tc.f); n != 0 {
			t.Errorf("%s: %v allocs, want 0", tc.name, n)
		}
	}
}

func TestPool_ConcurrentGetFree(t *testing.T) {
	p := mustPool(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := memtest.NewModel(g)
			for i := range 2000 {
				b := p.Get()
				n := 1 + (i*37+g*101)%3000
				b.Write(make([]byte, n))
				if _, err := m.Add(b.Bytes()); err != nil {
					t.Error(err)
					return
				}
				if _, err := m.Remove(0); err != nil {
					t.Error(err)
					return
				}
				b.Free()
			}
		}()
	}
	wg.Wait()
	if st := readStats(p); st.LiveObjects != 0 {
		t.Fatalf("live storage after every Free: %+v", st)
	}
}

func TestBuffer_ReadFromPassesErrors(t *testing.T) {
	b := buffer.Get()
	defer b.Free()
	boom := errors.New("boom")
	n, err := b.ReadFrom(iotest.TimeoutReader(iotest.OneByteReader(strings.NewReader("abc"))))
	if n != 1 || err != iotest.ErrTimeout {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
	n, err = b.ReadFrom(iotest.ErrReader(boom))
	if n != 0 || err != boom {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
}

func TestBuffer_WriteToShortWrite(t *testing.T) {
	b := buffer.Get()
	defer b.Free()
	b.WriteString("abcdef")
	n, err := b.WriteTo(shortWriter{})
	if n != 3 || err != io.ErrShortWrite || b.String() != "def" {
		t.Fatalf("WriteTo = %d, %v, left %q", n, err, b.String())
	}
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

// TestPool_BurstDecays holds many large buffers at once, frees them, and
// checks that the storage the pool keeps goes back to the GC once
// bytepool's retention rule says (two idle retention periods, on a clock
// the test moves, which runs the pool's timer) instead of staying pinned.
func TestPool_BurstDecays(t *testing.T) {
	var fake clock.Fake
	t.Cleanup(clock.Set(&fake))
	p := mustPool(t)
	const n, size = 200, 64 << 10
	bs := make([]*buffer.Buffer, n)
	for i := range bs {
		bs[i] = p.GetSize(size)
		bs[i].Write(make([]byte, size))
	}
	for _, b := range bs {
		b.Free()
	}
	if st := readStats(p); st.ReservedBytes < n*size {
		t.Fatalf("after the burst the pool keeps %d bytes, want the %d freed", st.ReservedBytes, n*size)
	}
	limit := uint64(n * size / 10)
	if checked.Enabled {
		limit += checked.QuarantineBytes // bytepool's quarantine holds the last frees
	}
	for range 50 {
		fake.Advance(bytepool.RetentionPeriod) // the pool's timer runs its tending step
		runtime.GC()
		time.Sleep(time.Millisecond) // let the GC's cleanups run
		if st := readStats(p); st.ReservedBytes < limit {
			return
		}
	}
	t.Fatalf("the pool still keeps %d bytes after 50 GC cycles", readStats(p).ReservedBytes)
}

func TestSizes_AsDocumented(t *testing.T) {
	if ^uint(0)>>32 == 0 {
		t.Skip("the docs quote 64-bit sizes")
	}
	if buffer.SizeofBuffer != 64 || buffer.SizeofJSON != 64 || buffer.SizeofReader != 56 {
		t.Fatalf("Buffer %d, JSON %d, Reader %d bytes", buffer.SizeofBuffer, buffer.SizeofJSON, buffer.SizeofReader)
	}
}

// The interfaces the issue names, checked at compile time.
var (
	_ io.Writer       = (*buffer.Buffer)(nil)
	_ io.StringWriter = (*buffer.Buffer)(nil)
	_ io.ByteWriter   = (*buffer.Buffer)(nil)
	_ io.ReaderFrom   = (*buffer.Buffer)(nil)
	_ io.WriterTo     = (*buffer.Buffer)(nil)
	_ io.Reader       = (*buffer.Buffer)(nil)
	_ io.Closer       = (*buffer.Buffer)(nil)
	_ fmt.Stringer    = (*buffer.Buffer)(nil)

	_ io.WriterTo = (*buffer.Slice)(nil)

	_ io.Reader      = (*buffer.Reader)(nil)
	_ io.ByteReader  = (*buffer.Reader)(nil)
	_ io.ByteScanner = (*buffer.Reader)(nil)
	_ io.WriterTo    = (*buffer.Reader)(nil)

	_ memkit.StatsSource = (*buffer.Pool)(nil)
	_ memkit.StatsSource = (*buffer.FixedPool)(nil)
)

// maxInt is the largest int, a size Grow must refuse without reserving.
const maxInt = int(^uint(0) >> 1)

// hostileSize is a size no machine the tests run on can serve, and more
// than the runtime serves at all (sysmem.MaxAlloc) on 64-bit platforms, so
// that it is refused however much the kernel overcommits. make would end
// the process over it; a Buffer must panic with bytes.ErrTooLarge.
var hostileSize = int(min(uint64(maxInt), 1<<50))

// unservable returns sizes the machine cannot serve: hostileSize and maxInt
// always, and where the kernel refuses mappings past RAM and swap (Linux
// without overcommit_memory=1) on a 64-bit platform, 1 TiB and 64 TiB too,
// which the runtime would try to map and then die over.
func unservable(t *testing.T) []int {
	sizes := []int{hostileSize, maxInt}
	mode, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	if runtime.GOOS == "linux" && uint64(maxInt) > 1<<47 && err == nil && strings.TrimSpace(string(mode)) != "1" {
		tib := uint64(1) << 40
		sizes = append(sizes, int(tib), int(tib<<6))
	} else {
		t.Logf("only sizes past what the runtime serves at all (overcommit_memory %q, %v)", mode, err)
	}
	return sizes
}

// Issue 21, case 1: GetSize and Grow of a size the machine cannot serve
// ended the process with the runtime's fatal "out of memory" (GetSize(1<<40)
// on a 24 GiB machine). The size is asked of the kernel before anything is
// reserved, and refused with bytes.ErrTooLarge, as bytes.Buffer refuses a
// Grow it cannot make, the Buffer unchanged. A Strict FixedPool buffer never
// reserves: its Grow changes nothing.
func TestBuffer_SizeTheSystemCannotServePanicsErrTooLarge(t *testing.T) {
	expand := mustFixed(t, 1, 64)
	strict := mustFixed(t, 1, 64, buffer.WithOverflow(buffer.Strict))
	for _, n := range unservable(t) {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			if v, _ := memtest.PanicValue(func() { buffer.GetSize(n) }); v != bytes.ErrTooLarge {
				t.Fatalf("GetSize(%d) panicked %v; want bytes.ErrTooLarge", n, v)
			}
			if v, _ := memtest.PanicValue(func() { mustPool(t).GetSize(n) }); v != bytes.ErrTooLarge {
				t.Fatalf("Pool.GetSize(%d) panicked %v; want bytes.ErrTooLarge", n, v)
			}
			var zero buffer.Buffer
			for name, b := range map[string]*buffer.Buffer{
				"Get": buffer.Get(), "zero": &zero, "Expand": expand.Checkout(), "Strict": strict.Checkout(),
			} {
				b.WriteString("kept")
				b.ReadByte()
				before := b.Cap()
				v, panicked := memtest.PanicValue(func() { b.Grow(n) })
				if name == "Strict" && panicked || name != "Strict" && v != bytes.ErrTooLarge {
					t.Fatalf("%s: Grow(%d) panicked %v (%v)", name, n, v, panicked)
				}
				if b.String() != "ept" || b.Cap() != before {
					t.Fatalf("%s: Grow(%d) changed the buffer: %q, cap %d -> %d", name, n, b.String(), before, b.Cap())
				}
				if err := b.UnreadByte(); err != nil || b.String() != "kept" {
					t.Fatalf("%s: UnreadByte after a refused Grow = %v, %q", name, err, b.String())
				}
				b.Free()
			}
		})
	}
}

// The two places UnreadByte differs from or goes beyond bytes.Buffer, as
// Buffer's doc says: a Strict buffer's refused write is no write, and a
// Grow that moved the contents leaves nothing to unread.
func TestBuffer_UnreadAfterARefusedWriteAndAMovingGrow(t *testing.T) {
	strict := mustFixed(t, 1, 8, buffer.WithOverflow(buffer.Strict)).Checkout()
	defer strict.Close()
	strict.WriteString("abcdefgh")
	strict.ReadByte()
	if n, err := strict.WriteString("too long"); n != 0 || err != io.ErrShortWrite {
		t.Fatalf("WriteString = %d, %v", n, err)
	}
	if err := strict.UnreadByte(); err != nil || strict.String() != "abcdefgh" {
		t.Fatalf("UnreadByte after a refused write = %v, %q", err, strict.String())
	}

	b := buffer.Get()
	defer b.Free()
	b.WriteString("abc")
	b.ReadByte()
	at := b.Storage()
	b.Grow(b.Cap() + 1)
	if b.Storage() == at {
		t.Fatal("the Grow did not move the contents")
	}
	if err := b.UnreadByte(); err == nil || err.Error() != "memkit/buffer: UnreadByte: previous operation was not a successful read" || b.String() != "bc" {
		t.Fatalf("UnreadByte after a moving Grow = %v, %q", err, b.String())
	}
	b.ReadRune()
	b.Grow(b.Cap() + 1)
	if err := b.UnreadRune(); err == nil || err.Error() != "memkit/buffer: UnreadRune: previous operation was not a successful ReadRune" || b.String() != "c" {
		t.Fatalf("UnreadRune after a moving Grow = %v, %q", err, b.String())
	}
}

// One Buffer, freed again and again, samples its first Free and one in 64
// after it: the 16th sample, which makes the first calibration, is its
// 961st Free, and the default size is 0 until then.
func TestPool_CalibrationCadence(t *testing.T) {
	if race.Enabled || buffer.Debug {
		t.Skip("the race detector drops sync.Pool Puts; memkitdebug never reuses a header: each Free would be a new header's first")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a GC cycle would drop the header
	p := mustPool(t)
	data := make([]byte, 3000)
	var first *buffer.Buffer
	for i := 1; i <= 961; i++ {
		b := p.Get()
		if first == nil {
			first = b
		} else if b != first {
			t.Fatalf("Get %d returned another header", i)
		}
		b.Write(data)
		if got := p.DefaultSize(); got != 0 {
			t.Fatalf("default size %d before Free %d; want 0 until the 961st", got, i)
		}
		b.Free()
	}
	if got := p.DefaultSize(); got != 4096 {
		t.Fatalf("default size %d after 961 Frees of 3000 bytes; want 4096", got)
	}
}
