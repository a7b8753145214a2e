package buffer_test

import (
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/race"
)

// alerts records the calls of a budget alert.
type alerts struct {
	mu       sync.Mutex
	up, down int
	last     int64
}

func (a *alerts) fn(used int64, above bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if above {
		a.up++
	} else {
		a.down++
	}
	a.last = used
}

func (a *alerts) counts() (up, down int, last int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.up, a.down, a.last
}

func TestBudget_InvalidOptionsNameTheOption(t *testing.T) {
	bp, _ := bytepool.New()
	fn := func(int64, bool) {}
	type invalid struct {
		fixed bool
		opts  []buffer.CommonOption
		want  string
	}
	const (
		zero     = "memkit/buffer: WithBudget(0): a budget is a number of bytes > 0; leave the option out for no limit"
		negative = "memkit/buffer: WithBudget(-5): a budget is a number of bytes > 0; leave the option out for no limit"
	)
	cases := []invalid{
		{false, []buffer.CommonOption{buffer.WithBytePool(bp), buffer.WithBudget(1 << 20)}, "memkit/buffer: WithBudget and WithBudgetAlert apply to the Pool's own bytepool; with WithBytePool, give them to bytepool.New"},
	}
	// Issue 13, case 10: a nil option, and an alert threshold <= 0 or a
	// nil alert function, are errors for both constructors; so are a
	// budget of 0 (leave the option out for none) and an alert above the
	// budget (it could never fire).
	for _, fixed := range []bool{true, false} {
		cases = append(cases,
			invalid{fixed, []buffer.CommonOption{buffer.WithBudget(0)}, zero},
			invalid{fixed, []buffer.CommonOption{buffer.WithBudget(-5)}, negative},
			invalid{fixed, []buffer.CommonOption{buffer.WithBudget(1 << 20), nil}, "memkit/buffer: option 1 is nil"},
			invalid{fixed, []buffer.CommonOption{buffer.WithBudgetAlert(0, fn)}, "memkit/buffer: WithBudgetAlert(0, fn): the threshold must be > 0 bytes"},
			invalid{fixed, []buffer.CommonOption{buffer.WithBudgetAlert(-1, nil)}, "memkit/buffer: WithBudgetAlert(-1, fn): the threshold must be > 0 bytes"},
			invalid{fixed, []buffer.CommonOption{buffer.WithBudgetAlert(64, nil)}, "memkit/buffer: WithBudgetAlert(64, nil): fn is nil; leave the option out for no alert"},
			invalid{fixed, []buffer.CommonOption{buffer.WithBudget(100), buffer.WithBudgetAlert(200, fn)}, "memkit/buffer: WithBudgetAlert(200, fn): the threshold is above WithBudget(100), so the alert could never fire"},
		)
	}
	for _, tc := range cases {
		var err error
		if tc.fixed {
			_, err = buffer.NewFixedPool(1, 64, asOptions[buffer.FixedOption](tc.opts)...)
		} else {
			_, err = buffer.NewPool(asOptions[buffer.PoolOption](tc.opts)...)
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("fixed=%v: error %v; want %q", tc.fixed, err, tc.want)
		}
	}
}

// asOptions converts options both constructors read to one constructor's
// option type (a nil stays nil).
func asOptions[O any](opts []buffer.CommonOption) []O {
	out := make([]O, len(opts))
	for i, o := range opts {
		if o != nil {
			out[i] = any(o).(O)
		}
	}
	return out
}

func TestFixedPool_BudgetRefusesExpansionsAndTryCheckout(t *testing.T) {
	var a alerts
	// The expansions' storage is bytepool's: a 128-byte class for 65..128.
	p := mustFixed(t, 1, 64, buffer.WithBudget(128+64), buffer.WithBudgetAlert(128, a.fn))
	b := p.Checkout()
	b.Write(make([]byte, 64))
	if _, err := b.Write(make([]byte, 10)); err != nil { // expands: 128 charged
		t.Fatal(err)
	}
	if up, _, last := a.counts(); up != 1 || last != 128 {
		t.Fatalf("alert after the expansion: up %d used %d", up, last)
	}
	// The pool is empty: TryCheckout would make a miss of 64 bytes, which
	// fits; a second would not.
	m, ok := p.TryCheckout()
	if !ok {
		t.Fatal("TryCheckout failed within the budget")
	}
	before := readStats(p)
	if _, ok := p.TryCheckout(); ok {
		t.Fatal("TryCheckout succeeded past the budget")
	}
	after := readStats(p)
	if after.Failures != before.Failures+1 || after.Allocs != before.Allocs || after.HeapFallbacks != before.HeapFallbacks {
		t.Fatalf("failed TryCheckout changed state: before %+v after %+v", before, after)
	}
	// An expansion past the budget is refused as Strict refuses: nothing
	// written, io.ErrShortWrite, a failure counted.
	m.Write(make([]byte, 64))
	if n, err := m.Write([]byte("x")); n != 0 || err != io.ErrShortWrite || m.Len() != 64 {
		t.Fatalf("expansion past the budget: %d, %v, len %d", n, err, m.Len())
	}
	if n, err := m.ReadFrom(strings.NewReader("xy")); n != 0 || err != io.ErrShortWrite {
		t.Fatalf("ReadFrom past the budget: %d, %v", n, err)
	}
	if st := readStats(p); st.Failures != after.Failures+2 {
		t.Fatalf("refusals counted: %+v", st)
	}
	// Checkout never fails: it makes a miss past the budget, charged.
	over := p.Checkout()
	if over == nil || over.Cap() != 64 {
		t.Fatal("Checkout past the budget")
	}
	over.Close()
	m.Close()
	b.Close()
	if up, down, last := a.counts(); up != 1 || down != 1 || last != 0 {
		t.Fatalf("alert after every Close: up %d down %d used %d", up, down, last)
	}
	// Back under the budget, TryCheckout works again.
	x, _ := p.TryCheckout()
	if y, ok := p.TryCheckout(); !ok {
		t.Fatal("TryCheckout of a miss after the budget came back")
	} else {
		y.Close()
	}
	x.Close()
}

func TestFixedPool_ZeroAllocsWithBudgetAlert(t *testing.T) {
	if race.Enabled || checked.Enabled {
		t.Skip("the race detector allocates; the checked build records every checkout")
	}
	p := mustFixed(t, 4, 1024, buffer.WithBudget(1<<20), buffer.WithBudgetAlert(1<<10, func(int64, bool) {}))
	if a := testing.AllocsPerRun(100, func() {
		b := p.Checkout()
		b.WriteString("hello")
		b.Close()
	}); a != 0 {
		t.Fatalf("Checkout+Write+Close: %v allocs/op; want 0", a)
	}
	q := mustPool(t, buffer.WithBudget(1<<30), buffer.WithBudgetAlert(1<<20, func(int64, bool) {}))
	q.Get().Free()
	if a := testing.AllocsPerRun(100, func() {
		b := q.GetSize(100)
		b.WriteString("hello")
		b.Free()
	}); a != 0 {
		t.Fatalf("Pool GetSize+Write+Free: %v allocs/op; want 0", a)
	}
}

func TestPool_BudgetIsItsBytepools(t *testing.T) {
	var a alerts
	p := mustPool(t, buffer.WithBudget(1<<20), buffer.WithBudgetAlert(4096, a.fn))
	var bufs []*buffer.Buffer
	for range 2 {
		bufs = append(bufs, p.GetSize(4000)) // bytepool's 4 KiB class
	}
	if up, _, _ := a.counts(); up != 1 {
		t.Fatalf("alert after 8 KiB of storage: %d", up)
	}
	for _, b := range bufs {
		b.Free()
	}
}
