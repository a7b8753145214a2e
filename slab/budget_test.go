package slab_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/slab"
)

// alert records the calls of a WithBudgetAlert callback.
type alert struct {
	ups, downs int
	last       int64
}

func (al *alert) fn(used int64, above bool) {
	if above {
		al.ups++
	} else {
		al.downs++
	}
	al.last = used
}

func TestArena_BudgetRefusesASlabAndLeavesTheArenaUnchanged(t *testing.T) {
	a := mustArena(t, 64, 1024, 2, slab.WithBudget(2048), slab.WithIdleSlabs(0))
	var bufs [][]byte
	for range 32 { // two slabs of 64-byte chunks: the budget
		b := a.Alloc(64)
		if b == nil {
			t.Fatal("Alloc failed within the budget")
		}
		bufs = append(bufs, b)
	}
	before := readStats(a)
	if b := a.Alloc(64); b != nil {
		t.Fatal("Alloc past the budget returned a buffer")
	}
	if b, err := a.TryAlloc(64); b != nil || !errors.Is(err, slab.ErrBudget) {
		t.Fatalf("TryAlloc past the budget = %d bytes, %v; want ErrBudget", len(b), err)
	}
	after := readStats(a)
	before.Failures += 2
	if after.String() != before.String() {
		t.Fatalf("a refused Alloc changed the arena:\nbefore %v\nafter  %v", &before, &after)
	}
	// A slab released gives its bytes back.
	for _, b := range bufs[:16] {
		a.DecRef(b)
	}
	a.FlushQuarantine()
	if a.Slabs() != 1 {
		t.Fatalf("slabs %d; want 1", a.Slabs())
	}
	if b := a.Alloc(1000); b == nil {
		t.Fatal("Alloc failed after a slab was released")
	} else {
		a.DecRef(b)
	}
	for _, b := range bufs[16:] {
		a.DecRef(b)
	}
}

// The budget options follow memkit's one budget vocabulary: a budget of 0
// is an error (leave the option out for no limit), and so is an alert that
// could never fire.
func TestBudget_BadOptionsAreErrors(t *testing.T) {
	fn := func(int64, bool) {}
	for _, c := range []struct {
		opts []slab.Option
		want string
	}{
		{[]slab.Option{slab.WithBudget(0)},
			"memkit/slab: WithBudget(0): a budget is a number of bytes > 0; leave the option out for no limit"},
		{[]slab.Option{slab.WithBudget(-1)},
			"memkit/slab: WithBudget(-1): a budget is a number of bytes > 0; leave the option out for no limit"},
		{[]slab.Option{slab.WithBudgetAlert(0, fn)},
			"memkit/slab: WithBudgetAlert(0, fn): the threshold must be > 0 bytes"},
		{[]slab.Option{slab.WithBudgetAlert(1024, nil)},
			"memkit/slab: WithBudgetAlert(1024, nil): fn is nil; leave the option out for no alert"},
		{[]slab.Option{slab.WithBudget(1024), slab.WithBudgetAlert(2048, fn)},
			"memkit/slab: WithBudgetAlert(2048, fn): the threshold is above WithBudget(1024), so the alert could never fire"},
	} {
		if a, err := slab.NewArena(64, 1024, 2, nil, c.opts...); a != nil || err == nil || err.Error() != c.want {
			t.Errorf("NewArena: %v; want %q", err, c.want)
		}
		if sh, err := slab.NewShared(64, 1024, 2, nil, c.opts...); sh != nil || err == nil || err.Error() != c.want {
			t.Errorf("NewShared: %v; want %q", err, c.want)
		}
	}
	// Within the rules, an alert at the budget itself is accepted.
	mustArena(t, 64, 1024, 2, slab.WithBudget(2048), slab.WithBudgetAlert(2048, fn))
}

// slab's ErrBudget and ErrNoSpace are memkit's two budget error kinds:
// errors.Is matches them with any package's error of the same kind.
func TestBudget_ErrorsMatchTheSharedKinds(t *testing.T) {
	otherBudget := fmt.Errorf("wrapped: %w", budget.NewErrBudget("other", "x"))
	otherNoSpace := fmt.Errorf("wrapped: %w", budget.NewErrNoSpace("other", "x"))
	if !errors.Is(otherBudget, slab.ErrBudget) || errors.Is(otherBudget, slab.ErrNoSpace) ||
		!errors.Is(otherNoSpace, slab.ErrNoSpace) || errors.Is(otherNoSpace, slab.ErrBudget) {
		t.Fatal("ErrBudget and ErrNoSpace do not match their kinds")
	}
	if slab.ErrBudget.Error() != "memkit/slab: byte budget exhausted" || slab.ErrNoSpace.Error() != "memkit/slab: malloc returned no slab" {
		t.Fatalf("texts %q, %q", slab.ErrBudget, slab.ErrNoSpace)
	}
}

func TestArena_BudgetAlertFiresOnceEachWay(t *testing.T) {
	var al alert
	a := mustArena(t, 64, 1024, 2, slab.WithBudgetAlert(2048, al.fn), slab.WithIdleSlabs(0))
	var bufs [][]byte
	for range 16 * 3 {
		bufs = append(bufs, a.Alloc(64))
	}
	if al.ups != 1 || al.downs != 0 || al.last != 2048 {
		t.Fatalf("after three slabs: %+v; want one call up at 2048", al)
	}
	for _, b := range bufs {
		a.DecRef(b)
	}
	a.FlushQuarantine()
	if al.ups != 1 || al.downs != 1 || al.last != 1024 {
		t.Fatalf("after freeing all: %+v; want one call down at 1024", al)
	}
}

func TestArena_BudgetAlertCostsTheHotPathNothing(t *testing.T) {
	skipIfChecked(t, "it records every allocation")
	var al alert
	a := mustArena(t, 64, 1<<16, 2, slab.WithBudget(1<<20), slab.WithBudgetAlert(1<<16, al.fn))
	keep := a.Alloc(64)
	if n := testing.AllocsPerRun(1000, func() { a.DecRef(a.Alloc(512)) }); n != 0 {
		t.Fatalf("Alloc+DecRef with a budget and an alert: %v allocs; want 0", n)
	}
	a.DecRef(keep)
}

func TestShared_BudgetIsSharedByTheShards(t *testing.T) {
	var al alert
	sh := mustShared(t, 64, 1024, slab.WithShards(4), slab.WithBudget(2048),
		slab.WithBudgetAlert(2048, al.fn), slab.WithIdleSlabs(0))
	a := sh.AllocOn(0, 64) // a slab in shard 0
	b := sh.AllocOn(1, 64) // and one in shard 1: the budget is spent
	if al.ups != 1 {
		t.Fatalf("alert %+v; want one call up", al)
	}
	if c := sh.AllocOn(2, 64); c != nil {
		t.Fatal("shard 2 took a slab past the shared budget")
	}
	// TryAlloc takes a free chunk of another shard before it gives up.
	var got [][]byte
	for {
		c, err := sh.TryAlloc(64)
		if err != nil {
			if !errors.Is(err, slab.ErrBudget) {
				t.Fatal(err)
			}
			break
		}
		got = append(got, c)
	}
	if len(got) != 30 {
		t.Fatalf("TryAlloc served %d chunks from the two slabs; want 30", len(got))
	}
	if s := sharedStats(sh); s.Failures != 2 || s.ReservedBytes != 2048 {
		t.Fatalf("stats %v; want 2 failures, 2 KiB reserved", &s)
	}
	for _, c := range append(got, a, b) {
		sh.DecRef(c)
	}
	sh.FlushQuarantine()
	giveBackIdle(t, sh)
	if s := sharedStats(sh); s.ReservedBytes != 0 || al.downs != 1 {
		t.Fatalf("after freeing all: %v, alert %+v", &s, al)
	}
}

// The checked build's quarantine does not change what the budget allows:
// chunks waiting in it are handed out before the budget refuses a slab.
func TestArena_BudgetCountsNoQuarantine(t *testing.T) {
	a := mustArena(t, 64, 1024, 2, slab.WithBudget(1024))
	for range 1000 {
		b := a.Alloc(64)
		if b == nil {
			t.Fatal("Alloc failed under the budget with chunks in quarantine")
		}
		a.DecRef(b)
	}
}
