package offheap_test

import (
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/offheap"
)

// badFree is the release build's one message for every Free the table of
// live mappings refuses.
const badFree = "memkit/offheap: double free or foreign memory"

// faultPanic is what a fault on a guard page panics with under
// debug.SetPanicOnFault; without it the program dies at the same access.
const faultPanic = "runtime error: invalid memory address or nil pointer dereference"

// withLive returns a mistake's intact check: a live mapping of a, filled
// with a pattern, must read back unchanged.
func withLive(t testing.TB, a *offheap.Allocator) func() error {
	m := memtest.NewModel(1)
	b, err := a.Alloc(300)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Free(b) })
	return m.VerifyAll
}

// faulting runs f where a fault panics, as a test can recover it.
func faulting(f func()) func() {
	return func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		f()
	}
}

// mistakes is offheap's misuse table; its rows in docs/safety.md are checked
// against it.
var mistakes = []memtest.Mistake{{
	Name: "double Free", Release: "panic `" + badFree + "`", Checked: "DoubleFree",
	Panic: badFree, Op: "Free", Kind: checked.DoubleFree,
	Setup: func(t testing.TB) (func(), func() error) {
		a := offheap.Default()
		intact := withLive(t, a) // first: the kernel reuses a freed mapping's address
		b := mustAlloc(t, 100)
		mustFree(t, b)
		return func() { _ = a.Free(b) }, intact
	},
}, {
	Name: "Free of memory it did not map", Release: "panic `" + badFree + "`", Checked: "ForeignFree",
	Panic: badFree, Op: "Free", Kind: checked.ForeignFree,
	Setup: func(t testing.TB) (func(), func() error) {
		return func() { _ = offheap.Free(make([]byte, 10)) }, withLive(t, offheap.Default())
	},
}, {
	Name: "Free of another Allocator's mapping", Release: "panic `" + badFree + "`", Checked: "ForeignFree",
	Panic: badFree, Op: "Free", Kind: checked.ForeignFree,
	Setup: func(t testing.TB) (func(), func() error) {
		other, err := offheap.New()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := other.Alloc(10)
		t.Cleanup(func() { _ = other.Free(b) })
		return func() { _ = offheap.Free(b) }, withLive(t, offheap.Default())
	},
}, {
	Name: "Free of a re-sliced mapping", Release: "panic `" + badFree + "`", Checked: "MovedFree",
	Panic: badFree, Op: "Free", Kind: checked.MovedFree,
	Setup: func(t testing.TB) (func(), func() error) {
		b := mustAlloc(t, 2*offheap.PageSize())
		t.Cleanup(func() { mustFree(t, b) })
		return func() { _ = offheap.Free(b[offheap.PageSize():]) }, withLive(t, offheap.Default())
	},
}, {
	Name:    "a write past the end, with `WithGuardPages` (Linux)",
	Release: "faults at the write (a `runtime.Error` under `debug.SetPanicOnFault`)", Checked: "the same",
	Panic: faultPanic,
	Setup: func(t testing.TB) (func(), func() error) {
		skipWithoutGuardPages(t)
		a := newGuarded(t)
		b, _ := a.Alloc(100)
		t.Cleanup(func() { _ = a.Free(b) })
		past := (*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), len(b)))
		return faulting(func() { *past = 1 }), withLive(t, a)
	},
}, {
	Name:    "a write after Free, with `WithGuardPages` (Linux)",
	Release: "faults at the write (a `runtime.Error` under `debug.SetPanicOnFault`)", Checked: "the same",
	Panic: faultPanic,
	Setup: func(t testing.TB) (func(), func() error) {
		skipWithoutGuardPages(t)
		a := newGuarded(t)
		b, _ := a.Alloc(100)
		if err := a.Free(b); err != nil {
			t.Fatal(err)
		}
		return faulting(func() { b[10] = 1 }), withLive(t, a)
	},
}}

// A write after Free without guard pages is not in the table: it faults
// only while the address stays unmapped, and once the kernel maps it again
// it lands in whatever lives there, so no test can make it safely.

func TestMistakes(t *testing.T) { memtest.RunMistakes(t, "offheap", mistakes) }
