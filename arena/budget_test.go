package arena_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/offheap"
)

// alert records the calls of a WithBudgetAlert callback.
type alert struct {
	mu         sync.Mutex
	ups, downs int
	last       int64
}

func (al *alert) fn(used int64, above bool) {
	al.mu.Lock()
	defer al.mu.Unlock()
	if above {
		al.ups++
	} else {
		al.downs++
	}
	al.last = used
}

func (al *alert) get() (ups, downs int, last int64) {
	al.mu.Lock()
	defer al.mu.Unlock()
	return al.ups, al.downs, al.last
}

// Issue 17: the budget vocabulary. The constructors check WithBudget and
// WithBudgetAlert together (not the option functions) and panic with
// budget.Options.Check's messages: WithBudget(0), which used to be a zero
// budget, is a mistake now.
func TestOptions_BudgetMistakesPanic(t *testing.T) {
	fn := func(int64, bool) {}
	for _, c := range []struct {
		name, want string
		opts       []arena.Option
	}{
		{"budget=0", "memkit/arena: WithBudget(0): a budget is a number of bytes > 0; leave the option out for no limit",
			[]arena.Option{arena.WithBudget(0)}},
		{"budget=-1", "memkit/arena: WithBudget(-1): a budget is a number of bytes > 0; leave the option out for no limit",
			[]arena.Option{arena.WithBudget(-1)}},
		{"alert=0", "memkit/arena: WithBudgetAlert(0, fn): the threshold must be > 0 bytes",
			[]arena.Option{arena.WithBudgetAlert(0, fn)}},
		{"alert=-5", "memkit/arena: WithBudgetAlert(-5, fn): the threshold must be > 0 bytes",
			[]arena.Option{arena.WithBudgetAlert(-5, fn)}},
		{"alert-nil-fn", "memkit/arena: WithBudgetAlert(1024, nil): fn is nil; leave the option out for no alert",
			[]arena.Option{arena.WithBudgetAlert(1024, nil)}},
		{"alert-above-budget", "memkit/arena: WithBudgetAlert(4096, fn): the threshold is above WithBudget(2048), so the alert could never fire",
			[]arena.Option{arena.WithBudget(2048), arena.WithBudgetAlert(4096, fn)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			memtest.CheckPanic(t, c.want, func() { arena.NewArena(c.opts...) })
			memtest.CheckPanic(t, c.want, func() { arena.NewTyped[int](c.opts...) })
			if c.name != "alert-above-budget" {
				memtest.CheckPanic(t, c.want, func() { arena.NewPool(c.opts...) })
			}
		})
	}
	// A Pool's alert watches all its arenas, its budget bounds each one:
	// the alert may be above the budget, and must still be valid.
	p := arena.NewPool(arena.WithBudget(2048), arena.WithBudgetAlert(4096, fn))
	p.Put(p.Get())
	memtest.CheckPanic(t, "memkit/arena: WithBudgetAlert(4096, nil): fn is nil; leave the option out for no alert",
		func() { arena.NewPool(arena.WithBudget(2048), arena.WithBudgetAlert(4096, nil)) })
	memtest.CheckPanic(t, "memkit/arena: WithBudget(0): a budget is a number of bytes > 0; leave the option out for no limit",
		func() { arena.NewPool(arena.WithBudget(0), arena.WithBudgetAlert(4096, fn)) })
	arena.NewArena(arena.WithBudget(2048), arena.WithBudgetAlert(2048, fn)).Free()
}

// ErrBudget is budget's kind: errors.Is matches another package's.
func TestErrBudget_MatchesEveryPackagesErrBudget(t *testing.T) {
	a := arena.NewArena(arena.WithChunkSize(1024), arena.WithBudget(1024))
	_, err := arena.TryMakeSlice[byte](a, 0, 2048)
	if !errors.Is(err, arena.ErrBudget) || !errors.Is(err, offheap.ErrBudget) {
		t.Fatalf("TryMakeSlice past the budget: %v; want ErrBudget, of offheap too", err)
	}
	if err.Error() != "memkit/arena: byte budget exhausted" {
		t.Fatalf("error %q", err)
	}
}

func TestArena_BudgetAlertFiresOnceEachWay(t *testing.T) {
	var al alert
	a := arena.NewArena(arena.WithChunkSize(1024), arena.WithBudgetAlert(2048, al.fn))
	for range 3 * 1024 / 64 { // three chunks of [8]int64
		arena.New[[8]int64](a)
	}
	if ups, downs, last := al.get(); ups != 1 || downs != 0 || last != 2048 {
		t.Fatalf("after three chunks: %d up, %d down, last %d; want one up at 2048", ups, downs, last)
	}
	a.Free()
	if ups, downs, last := al.get(); ups != 1 || downs != 1 || last >= 2048 {
		t.Fatalf("after Free: %d up, %d down, last %d; want one down", ups, downs, last)
	}
	ty := arena.NewTyped[[8]int64](arena.WithChunkSize(1024), arena.WithBudgetAlert(1024, al.fn))
	ty.New()
	ty.Free()
	if ups, downs, _ := al.get(); ups != 2 || downs != 2 {
		t.Fatalf("Typed: %d up, %d down; want one more each", ups, downs)
	}
}

// A Pool's alert watches the memory all its arenas hold: what its
// ReadStats reports as ReservedBytes.
func TestPool_BudgetAlertWatchesAllItsArenas(t *testing.T) {
	var al alert
	p := arena.NewPool(arena.WithChunkSize(1024), arena.WithBudgetAlert(2048, al.fn))
	a, b := p.Get(), p.Get()
	arena.New[[8]int64](a) // a chunk each: 2 KiB together
	if ups, _, _ := al.get(); ups != 0 {
		t.Fatal("alert below the threshold")
	}
	arena.New[[8]int64](b)
	var st memkit.Stats
	p.ReadStats(&st)
	if ups, _, last := al.get(); ups != 1 || last != 2048 || st.ReservedBytes != 2048 {
		t.Fatalf("alert %d up at %d, pool reserves %d; want one up at 2048", ups, last, st.ReservedBytes)
	}
	a.Free()
	if _, downs, last := al.get(); downs != 1 || last != 1024 {
		t.Fatalf("after a Free: %d down at %d; want one at 1024", downs, last)
	}
	p.Put(b)
}

func TestArena_BudgetAlertCostsTheHotPathNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	var al alert
	a := arena.NewArena(arena.WithBudget(1<<20), arena.WithBudgetAlert(1<<10, al.fn))
	ty := arena.NewTyped[int64](arena.WithBudgetAlert(1<<10, al.fn))
	arena.New[int64](a)
	ty.New()
	for name, f := range map[string]func(){
		"New":       func() { arena.New[int64](a) },
		"Typed.New": func() { ty.New() },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s with an alert: %v allocs; want 0", name, n)
		}
	}
}
