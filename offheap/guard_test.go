package offheap_test

import (
	"errors"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/offheap"
)

func newGuarded(t testing.TB, opts ...offheap.Option) *offheap.Allocator {
	t.Helper()
	a, err := offheap.New(append([]offheap.Option{offheap.WithGuardPages()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Purge(); err != nil {
			t.Error(err)
		}
	})
	return a
}

func skipWithoutGuardPages(t testing.TB) {
	t.Helper()
	if !offheap.GuardPagesAvailable {
		t.Skip("no guard pages on this platform")
	}
}

func TestGuardPages_Layout(t *testing.T) {
	a := newGuarded(t)
	ps := offheap.PageSize()
	for _, n := range []int{0, 1, 100, ps - 1, ps, ps + 1, 3*ps + 5} {
		b, err := a.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != n {
			t.Fatalf("Alloc(%d): len %d", n, len(b))
		}
		if offheap.GuardPagesAvailable {
			end := uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(n)
			if cap(b) != n || (n > 0 && end%uintptr(ps) != 0) {
				t.Fatalf("Alloc(%d): cap %d, end %#x not at a page boundary", n, cap(b), end)
			}
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("Alloc(%d) not zeroed", n)
			}
			b[i] = byte(i)
		}
		if err := a.Free(b); err != nil {
			t.Fatal(err)
		}
	}
	var s, g memkit.Stats
	a.ReadStats(&s)
	offheap.ReadStats(&g)
	if s.Allocs != 7 || s.Frees != 7 || s.LiveObjects != 0 || s.InUseBytes != 0 {
		t.Fatalf("stats %v", &s)
	}
	if offheap.GuardPagesAvailable && (s.ReservedBytes == 0 || g.ReservedBytes < s.ReservedBytes) {
		t.Fatalf("quarantine not in ReservedBytes: %v (process: %v)", &s, &g)
	}
	if err := a.Purge(); err != nil {
		t.Fatal(err)
	}
	if a.ReadStats(&s); s.ReservedBytes != 0 {
		t.Fatalf("after Purge: %v", &s)
	}
}

// The quarantine keeps the most recent frees protected, up to its size.
func TestGuardPages_QuarantineBound(t *testing.T) {
	skipWithoutGuardPages(t)
	ps := offheap.PageSize()
	a := newGuarded(t, offheap.WithQuarantine(int64(3*ps)))
	for range 10 {
		b, err := a.Alloc(ps)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Free(b); err != nil {
			t.Fatal(err)
		}
	}
	var s memkit.Stats
	if a.ReadStats(&s); s.ReservedBytes != uint64(3*ps) {
		t.Fatalf("quarantine holds %d bytes; want %d", s.ReservedBytes, 3*ps)
	}
	z := newGuarded(t, offheap.WithQuarantine(0))
	b, _ := z.Alloc(10)
	if err := z.Free(b); err != nil {
		t.Fatal(err)
	}
	if z.ReadStats(&s); s.ReservedBytes != 0 {
		t.Fatalf("no quarantine: %d bytes held", s.ReservedBytes)
	}
}

var sink byte

// faultAddr runs f, which must fault, in a goroutine state where a fault
// panics (debug.SetPanicOnFault), and returns the faulting address.
func faultAddr(t *testing.T, f func()) (addr uintptr) {
	t.Helper()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		e, ok := r.(interface{ Addr() uintptr })
		if !ok {
			t.Fatalf("no fault: recovered %v", r)
		}
		addr = e.Addr()
	}()
	f()
	return 0
}

// In process, with SetPanicOnFault: the first byte past the end and a byte
// after Free fault, at the address touched.
func TestGuardPages_FaultAddress(t *testing.T) {
	skipWithoutGuardPages(t)
	a := newGuarded(t)
	b, err := a.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	past := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), len(b))
	if got := faultAddr(t, func() { sink = *(*byte)(past) }); got != uintptr(past) {
		t.Fatalf("fault at %#x; want %#x, one past the end", got, past)
	}
	if err := a.Free(b); err != nil {
		t.Fatal(err)
	}
	if got := faultAddr(t, func() { sink = b[10] }); got != uintptr(unsafe.Pointer(&b[0]))+10 {
		t.Fatalf("read after free faulted at %#x", got)
	}
	if got := faultAddr(t, func() { b[99] = 1 }); got != uintptr(unsafe.Pointer(&b[0]))+99 {
		t.Fatalf("write after free faulted at %#x", got)
	}
}

// faultEnv names the bad access a re-executed test binary makes.
const faultEnv = "MEMKIT_OFFHEAP_FAULT"

// badAccess makes the access what names, on memory from a guarded
// allocator; it must not return.
func badAccess(what string) {
	a, err := offheap.New(offheap.WithGuardPages())
	if err != nil {
		panic(err)
	}
	b, err := a.Alloc(100)
	if err != nil {
		panic(err)
	}
	past := (*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), len(b)))
	switch what {
	case "overflow-write":
		*past = 1
	case "overflow-read":
		sink = *past
	case "write-after-free":
		_ = a.Free(b)
		b[0] = 1
	case "read-after-free":
		_ = a.Free(b)
		sink = b[50]
	}
}

// Each bad access kills the program at once with a fault: run in a child
// process, as a fault outside SetPanicOnFault cannot be recovered.
func TestGuardPages_BadAccessFaults(t *testing.T) {
	skipWithoutGuardPages(t)
	if what := os.Getenv(faultEnv); what != "" {
		badAccess(what)
		os.Stdout.WriteString("NO FAULT\n")
		os.Exit(0)
	}
	for _, what := range []string{"overflow-write", "overflow-read", "write-after-free", "read-after-free"} {
		t.Run(what, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestGuardPages_BadAccessFaults$")
			cmd.Env = append(os.Environ(), faultEnv+"="+what)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("child: %v\n%s", err, out)
			}
			for _, want := range []string{"unexpected fault address", "fatal error: fault", "SIGSEGV", "offheap_test.badAccess"} {
				if !strings.Contains(string(out), want) {
					t.Fatalf("child output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// A mapping belongs to its Allocator.
func TestAllocator_OwnsItsMappings(t *testing.T) {
	a, err := offheap.New()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := a.Alloc(10)
	checkBadFree(t, checked.ForeignFree, func() { _ = offheap.Free(b) })
	c := mustAlloc(t, 10)
	checkBadFree(t, checked.ForeignFree, func() { _ = a.Free(c) })
	// Release works on any mapping.
	if err := offheap.Release(b); err != nil {
		t.Fatal(err)
	}
	mustFree(t, c)
	if err := a.Free(b); err != nil {
		t.Fatal(err)
	}
	var s memkit.Stats
	if a.ReadStats(&s); s.BadFrees != 1 || s.Releases != 1 || s.Allocs != 1 || s.Frees != 1 {
		t.Fatalf("stats %v", &s)
	}
	if offheap.Default().ReadStats(&s); s.BadFrees == 0 {
		t.Fatalf("Default stats %v", &s)
	}
}

func TestNew_InvalidOptionsNameTheOption(t *testing.T) {
	fn := func(int64, bool) {}
	for _, tc := range []struct {
		opts []offheap.Option
		want string
	}{
		{[]offheap.Option{offheap.WithQuarantine(-1)}, "memkit/offheap: WithQuarantine(-1): the quarantine must be >= 0 bytes (0 unmaps at once)"},
		// Issue 17: WithBudget(0), once no limit, is a mistake.
		{[]offheap.Option{offheap.WithBudget(0)}, "memkit/offheap: WithBudget(0): a budget is a number of bytes > 0; leave the option out for no limit"},
		{[]offheap.Option{offheap.WithBudget(-1)}, "memkit/offheap: WithBudget(-1): a budget is a number of bytes > 0; leave the option out for no limit"},
		{[]offheap.Option{offheap.WithBudgetAlert(0, fn)}, "memkit/offheap: WithBudgetAlert(0, fn): the threshold must be > 0 bytes"},
		{[]offheap.Option{offheap.WithBudgetAlert(-5, fn)}, "memkit/offheap: WithBudgetAlert(-5, fn): the threshold must be > 0 bytes"},
		{[]offheap.Option{offheap.WithBudgetAlert(4096, nil)}, "memkit/offheap: WithBudgetAlert(4096, nil): fn is nil; leave the option out for no alert"},
		{[]offheap.Option{offheap.WithBudget(4096), offheap.WithBudgetAlert(8192, fn)},
			"memkit/offheap: WithBudgetAlert(8192, fn): the threshold is above WithBudget(4096), so the alert could never fire"},
		{[]offheap.Option{nil}, "memkit/offheap: option 1 of 1 is nil"},
	} {
		a, err := offheap.New(tc.opts...)
		if a != nil || err == nil || err.Error() != tc.want {
			t.Errorf("New = %v, %v; want nil, %q", a, err, tc.want)
		}
	}
}
