package memtest

import (
	"expvar"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
)

// Helpers the tests of the allocators that hand out ranges of their own
// memory (extent, buddy) share: their fuzz targets free ranges a model says
// are free, reused or foreign, and check what the allocator says.

// ReleaseOnly skips a test of a release-build property the checked build
// does not keep (it allocates to record stacks).
func ReleaseOnly(t testing.TB) {
	t.Helper()
	if checked.Enabled {
		t.Skip("release build only: the checked build records a stack per call")
	}
}

// Addr returns the address of b's backing array (of b[:cap(b)], so that an
// empty slice with capacity has one).
func Addr(b []byte) uintptr { return addr(b) }

// Overlaps reports whether b overlaps a live block of m, up to the
// capacities.
func (m *Model) Overlaps(b []byte) bool {
	for _, blk := range m.Live {
		if Overlap(blk.Buf, b) {
			return true
		}
	}
	return false
}

// Drop forgets block i without verifying it (a mistaken free gave it back
// under its owner, and the checked build poisoned it); the last block takes
// index i.
func (m *Model) Drop(i int) {
	last := len(m.Live) - 1
	m.Live[i] = m.Live[last]
	m.Live[last] = Block{}
	m.Live = m.Live[:last]
}

// PanicValue runs f and returns what it panicked with, and whether it did
// (a nil panic value included).
func PanicValue(f func()) (v any, panicked bool) {
	panicked = true
	defer func() {
		if panicked {
			v = recover()
		}
	}()
	f()
	panicked = false
	return nil, false
}

// IsPanicOf reports whether v, a panic value, is a panic of allocator
// ("extent"): a "memkit/<allocator>: " message in the release build, a
// *checked.Misuse from it in the checked build.
func IsPanicOf(allocator string, v any) bool {
	if m, ok := v.(*checked.Misuse); ok {
		return m.Allocator == allocator
	}
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "memkit/"+allocator+": ")
}

// BadFreeOK runs f, a mistaken free by op of allocator, and reports whether
// it panicked as one: in the release build with one of msgs, in the checked
// build with a *checked.Misuse from allocator and op of one of kinds.
func BadFreeOK(allocator, op string, f func(), msgs []string, kinds ...string) bool {
	if !checked.Enabled {
		return slices.Contains(msgs, PanicOf(f))
	}
	m, _ := MisuseOf(f)
	return m != nil && m.Allocator == allocator && m.Op == op && slices.Contains(kinds, m.Kind)
}

// WriteAfterFree writes into b[0], a byte of freed memory no one holds,
// and checks what memkit.Leaks on src says: nothing, or in the checked
// build, while the memory waits in the quarantine, a UseAfterFree. It puts
// the byte back, so that the allocator's poison check of a later
// allocation stays quiet.
func WriteAfterFree(src memkit.StatsSource, b []byte) error {
	old := b[0]
	b[0] = ^old
	defer func() { b[0] = old }()
	if v, ok := PanicValue(func() { PanicWithLeaksError(src) }); ok {
		if m, _ := v.(*checked.Misuse); m == nil || m.Kind != checked.UseAfterFree {
			return fmt.Errorf("write after free: Leaks panicked %v; want UseAfterFree", v)
		}
	}
	return nil
}

// Churn is the owner's side of ReadWhileChurning: alloc returns n bytes or
// false when the allocator has no room, free gives them back.
type Churn struct {
	Alloc   func(n int) ([]byte, bool)
	Free    func(b []byte)
	MaxLive int // at most this many allocations live at once
	MaxSize int // sizes from 1 to MaxSize
}

// StatsPublisher is an allocator whose owner publishes the figures
// ReadStats shows other goroutines.
type StatsPublisher interface {
	memkit.StatsSource
	PublishStats()
}

// ReadWhileChurning publishes src as name and reads its stats from two
// other goroutines (one through expvar, as /debug/vars reads it), checking
// each snapshot against the one before with check, while the calling
// goroutine, src's owner, makes 40000 random allocations and frees checked
// against a model. Then the owner publishes, and a reader must see exactly
// the allocations live: the stats are read only from what the owner
// published, without a race (go test -race).
func ReadWhileChurning(t *testing.T, name string, src StatsPublisher, c Churn, check func(s, prev *memkit.Stats) error) {
	t.Helper()
	memkit.Publish(name, src)
	defer memkit.Unpublish(name)
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var prev, s memkit.Stats
			for !stop.Load() {
				if r == 1 {
					_ = expvar.Get(memkit.ExpvarName).String()
				}
				src.ReadStats(&s)
				if err := check(&s, &prev); err != nil {
					errs <- err
					return
				}
				prev = s
			}
		}()
	}
	m := NewModel(0)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 40000 {
		if live := len(m.Live); live > 0 && (rng.IntN(2) == 0 || live > c.MaxLive) {
			b, err := m.Remove(rng.IntN(live))
			if err != nil {
				t.Fatal(err)
			}
			c.Free(b)
		} else if b, ok := c.Alloc(1 + rng.IntN(c.MaxSize)); ok {
			if _, err := m.Add(b); err != nil {
				t.Fatal(err)
			}
		}
		if i%1000 == 0 {
			if err := m.VerifyAll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	src.PublishStats()
	var s memkit.Stats
	done := make(chan struct{})
	go func() { src.ReadStats(&s); close(done) }()
	<-done
	if live := uint64(len(m.Live)); s.LiveObjects != live || s.Allocs-s.Frees != live {
		t.Fatalf("published %v; want %d live", &s, live)
	}
}
