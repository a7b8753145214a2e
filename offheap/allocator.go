package offheap

import (
	"fmt"
	"github.com/memkit/memkit/internal/option"
	"github.com/memkit/memkit/internal/owned"
	"sync"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/stats"
)

// Allocator hands out off-heap memory as the package-level functions do,
// with options: guard pages that make an overflow or a use after free
// fault at once ([WithGuardPages]), and a byte budget with an alert
// ([WithBudget], [WithBudgetAlert]). The package-level [Alloc] and [Free]
// are those of [Default], an Allocator with no options.
//
// An Allocator is safe for concurrent use by multiple goroutines. The zero
// value is not usable: an Allocator must be created with [New] (or be
// [Default]). It must not be copied. Alloc and Free are system calls (a few
// microseconds; with guard pages, Free is two: mprotect and madvise) plus a
// binary search of the process's mappings under one lock, and do not
// allocate. Each mapping is rounded up to whole pages, plus one page of
// address space (not memory) for the guard page. Memory is zeroed by the
// kernel and lives outside the Go heap (see [MmapAvailable]).
//
// A mapping belongs to the Allocator that made it: freeing it through
// another one, or through the package-level [Free] when it came from an
// Allocator of [New], panics as foreign memory. [Release] works on any.//
// Built with -tags memkitdebug, every Allocator (Default included) records
// the stack of each Alloc, and a bad Free panics with a *memkit.Misuse that
// names the mistake and the stacks (a double free, with the first free's;
// a moved start; another Allocator's mapping; memory the package did not
// map); memkit.Leaks lists the live mappings with their allocation stacks.
// Writes after free and past the end are left to guard pages, in both
// builds. The checked build adds a stack capture (about a microsecond) and
// an allocation to each Alloc and Free.
type Allocator struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	guard      bool  // guard pages, where the platform has them
	quarantine int64 // bytes of freed guarded mappings kept protected
	budget     *budget.Budget
	tr         *checked.Tracker // checked build only

	// Under table.mu.
	q        []mapping // quarantined, oldest first
	qBytes   int64     // their usable bytes
	mapped   uint64
	live     int
	allocs   uint64
	frees    uint64
	failures uint64
	releases uint64
	badFrees uint64
}

// std is the allocator of the package-level functions.
var std = newStd()

func newStd() *Allocator {
	a := &Allocator{}
	if checked.Enabled {
		a.tr = checked.NewTracker("offheap")
		checked.Register(a, a.tr)
	}
	return a
}

// Default returns the Allocator behind the package-level functions: no
// guard pages, no budget. Its ReadStats counts its own mappings, those of
// Alloc and AllocHuge (and of the memkit allocators that take blocks from
// them); the package-level [ReadStats] counts every Allocator's. In the
// checked build, memkit.Leaks(offheap.Default()) lists its live mappings.
func Default() *Allocator { return std }

// Option configures an [Allocator] built by [New].
type Option func(*config)

// DefaultQuarantine is the bytes of freed mappings [WithGuardPages] keeps
// protected by default.
const DefaultQuarantine = 64 << 20

type config struct {
	budget.Options // WithBudget and WithBudgetAlert

	guard      bool
	quarantine int64
}

// WithGuardPages gives each mapping a guard page: the slice Alloc returns
// ends exactly at a page boundary, followed by a page mapped with no access
// (mprotect PROT_NONE), so a read or write one byte past its end faults at
// once; and Free protects the whole mapping instead of unmapping it, and
// keeps it in a quarantine (see [WithQuarantine]), so a read or write after
// Free faults too. The fault kills the program with "unexpected fault
// address" and a stack trace pointing at the access, or, in a goroutine
// that called runtime/debug.SetPanicOnFault(true), panics with a
// runtime.Error carrying the address.
//
// The slice's capacity is its length (not rounded to pages), so append past
// it reallocates; its start is aligned only as n allows (round n up to a
// multiple of 8 for 8-byte values). Bytes before the start, the rest of the
// first page, are not guarded. Guard pages cost a page of address space per
// mapping and a system call more per Free; quarantined pages are given back
// to the OS (madvise), keeping only their address space.
//
// Guard pages need mprotect: they are made on Linux ([GuardPagesAvailable] is true).
// Elsewhere the option is accepted and ignored: mappings are laid out as
// without it, and Free unmaps at once.
func WithGuardPages() Option { return func(c *config) { c.guard = true } }

// WithQuarantine sets the bytes of freed mappings [WithGuardPages] keeps
// protected (default [DefaultQuarantine], 64 MiB): past it, the oldest are
// unmapped, and their addresses may then be mapped again, by this process
// or the kernel's next mmap, after which a stale access no longer faults.
// 0 unmaps at once. The quarantine holds address space, not memory.
func WithQuarantine(n int64) Option { return func(c *config) { c.quarantine = n } }

// WithBudget bounds the bytes of the allocator's live mappings, rounded to
// pages, guard pages not counted, to n bytes; n must be > 0 (leave the
// option out for no limit): [New] returns an error otherwise. An Alloc that
// would pass it returns [ErrBudget] and changes nothing but
// Stats.Failures; the budget is charged on Alloc and given back on Free,
// both system calls already, so it costs them an atomic add.
func WithBudget(n int64) Option { return func(c *config) { c.SetLimit(n) } }

// WithBudgetAlert calls fn with the bytes of the allocator's live mappings
// (as [WithBudget] counts them) when they rise to threshold or more (above
// true), and again when they fall back below it (above false), for load
// shedding. It is evaluated on each Alloc and Free, after the mapping is
// counted or uncounted. fn runs inside the Alloc or Free that crossed the
// threshold, on its goroutine: it must be quick and must not call the
// allocator. threshold must be > 0, fn must not be nil, and with a budget
// the threshold must not be above it: [New] returns an error otherwise.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.SetAlert(threshold, fn) }
}

// ErrBudget is returned by [Allocator.Alloc] when the mapping would pass
// the allocator's budget ([WithBudget]). Nothing changes but
// Stats.Failures. errors.Is matches it with every memkit package's
// ErrBudget.
var ErrBudget error = budget.NewErrBudget("offheap", "the mapping would pass the WithBudget limit")

// New returns an allocator configured by opts, or an error naming the first
// invalid option.
func New(opts ...Option) (*Allocator, error) {
	cfg := config{quarantine: DefaultQuarantine}
	if err := option.Apply(&cfg, opts); err != nil {
		return nil, fmt.Errorf("memkit/offheap: %w", err)
	}
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("memkit/offheap: %w", err)
	}
	a := &Allocator{guard: cfg.guard && GuardPagesAvailable, quarantine: cfg.quarantine, budget: cfg.New()}
	if checked.Enabled {
		a.tr = checked.NewTracker("offheap")
		checked.Register(a, a.tr)
	}
	return a, nil
}

// check returns what is wrong with the options, one case per mistake, or
// nil. The message has no package prefix: New adds it.
func (c *config) check() error {
	if c.quarantine < 0 {
		return fmt.Errorf("WithQuarantine(%d): the quarantine must be >= 0 bytes (0 unmaps at once)", c.quarantine)
	}
	return c.Options.Check() // WithBudget, WithBudgetAlert
}

// Alloc returns n bytes of zeroed memory from outside the Go heap. Without
// guard pages it is the package-level [Alloc]: length n, capacity n rounded
// up to whole pages, page-aligned start. With them ([WithGuardPages]),
// length and capacity are n and the slice ends at a page boundary, before
// the guard page. It panics with "memkit/offheap: negative size" if n < 0,
// returns [ErrBudget] past the budget, and another error if the OS refuses
// the mapping.
func (a *Allocator) Alloc(n int) ([]byte, error) { return a.alloc(n, false) }

// AllocHuge is [Allocator.Alloc] for memory that should be backed by
// transparent huge pages, as the package-level [AllocHuge] is for [Alloc]:
// the size is rounded up to whole huge pages and the mapping advised
// MADV_HUGEPAGE where the OS supports it.
func (a *Allocator) AllocHuge(n int) ([]byte, error) { return a.alloc(n, true) }

func (a *Allocator) alloc(n int, huge bool) ([]byte, error) {
	if n < 0 {
		panic(errNegative)
	}
	size, ok := roundUp(n, pageSize)
	if ok && huge && hugePages {
		size, ok = roundUp(size, hugePageSize)
	}
	mapLen := size
	if a.guard {
		mapLen += pageSize
		ok = ok && mapLen > size
	}
	if !ok {
		return nil, fmt.Errorf("memkit/offheap: size %d too large", n)
	}
	if !a.budget.TryCharge(int64(size)) {
		a.failed()
		return nil, ErrBudget
	}
	b, err := sysAlloc(mapLen)
	if err == nil && a.guard {
		if err = sysProtect(b[size:]); err != nil {
			_ = sysFree(b)
		}
	}
	if err != nil {
		a.budget.Release(int64(size))
		a.failed()
		return nil, fmt.Errorf("memkit/offheap: mmap %d bytes: %w", mapLen, err)
	}
	if huge && hugePages {
		adviseHuge(b) // best effort: the mapping works without it
	}
	m := mapping{p: unsafe.Pointer(unsafe.SliceData(b)), n: uintptr(mapLen), size: uintptr(size), owner: a}
	out := b[:n:size]
	if a.guard {
		out = b[size-n : size : size]
	}
	m.user = uintptr(unsafe.Pointer(unsafe.SliceData(out[:cap(out)])))
	table.mu.Lock()
	i := search(m.start())
	table.live = append(table.live, mapping{})
	copy(table.live[i+1:], table.live[i:])
	table.live[i] = m
	table.mapped += uint64(size)
	table.allocs++
	a.mapped += uint64(size)
	a.live++
	a.allocs++
	table.mu.Unlock()
	owned.Add(m.whole(), "offheap", false)
	if checked.Enabled {
		a.tr.Alloc(m.user, n, checked.SkipWithin(pkgPath))
	}
	return out, nil
}

func (a *Allocator) failed() {
	table.mu.Lock()
	table.failures++
	a.failures++
	table.mu.Unlock()
}

// Free unmaps memory from a.Alloc, or, with guard pages, protects it and
// puts it in quarantine. b must start where Alloc's slice started; its
// length and capacity do not matter, the whole mapping is freed. After Free
// no slice of the mapping may be used: touching it faults.
//
// It panics with "memkit/offheap: double free or foreign memory" if b does
// not start a live mapping of a (counting it in Stats.BadFrees first), and
// returns an error only if the OS refuses to unmap or protect.
func (a *Allocator) Free(b []byte) error {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)])))
	table.mu.Lock()
	i := containing(start)
	// A slice of capacity 0 names no byte: one at the end of a mapping
	// points at the start of the next, which it must not free. Only a
	// guarded Alloc(0) hands one out, pointing at its guard page.
	if i < 0 || table.live[i].user != start || table.live[i].owner != a ||
		cap(b) == 0 && table.live[i].size == table.live[i].n {
		table.badFrees++
		a.badFrees++
		var m mapping
		if i >= 0 {
			m = table.live[i]
		}
		table.mu.Unlock()
		if checked.Enabled {
			panic(a.badFreeChecked(start, cap(b), m))
		}
		panic(errDoubleFree)
	}
	m := table.live[i]
	table.live = append(table.live[:i], table.live[i+1:]...)
	table.mapped -= uint64(m.size)
	table.frees++
	a.mapped -= uint64(m.size)
	a.live--
	a.frees++
	table.mu.Unlock()
	a.budget.Release(int64(m.size))
	owned.Remove(m.whole(), "offheap")
	var rec *checked.Record
	if checked.Enabled {
		// Before the unmap, while the address cannot be mapped again.
		rec = a.tr.Free("Free", start, checked.SkipWithin(pkgPath))
	}
	// Unmap or protect after unlocking: the range is out of the table, so
	// no other Free or Release can reach it.
	if m.n != m.size {
		return a.quarantineAdd(m)
	}
	if checked.Enabled {
		a.hold(m, rec)
		return nil
	}
	if err := sysFree(m.whole()); err != nil {
		return fmt.Errorf("memkit/offheap: munmap: %w", err)
	}
	return nil
}

// quarantineAdd protects the freed guarded mapping m, gives its pages back
// to the OS, and keeps it in the quarantine, unmapping the oldest mappings
// past the quarantine's size.
func (a *Allocator) quarantineAdd(m mapping) error {
	usable := m.whole()[:m.size]
	if err := sysProtect(usable); err != nil {
		_ = sysFree(m.whole())
		return fmt.Errorf("memkit/offheap: mprotect: %w", err)
	}
	_ = sysRelease(usable) // best effort: the pages are protected anyway
	table.mu.Lock()
	a.q = append(a.q, m)
	a.qBytes += int64(m.size)
	table.quarantined += uint64(m.size)
	table.mu.Unlock()
	return a.evict(a.quarantine)
}

// evict unmaps the oldest quarantined mappings until the quarantine holds
// at most keep bytes.
func (a *Allocator) evict(keep int64) error {
	var first error
	for {
		table.mu.Lock()
		if a.qBytes <= keep || len(a.q) == 0 {
			table.mu.Unlock()
			return first
		}
		m := a.q[0]
		a.q[0] = mapping{}
		a.q = a.q[1:]
		a.qBytes -= int64(m.size)
		table.quarantined -= uint64(m.size)
		table.mu.Unlock()
		if err := sysFree(m.whole()); err != nil && first == nil {
			first = fmt.Errorf("memkit/offheap: munmap: %w", err)
		}
	}
}

// Purge unmaps every mapping held in quarantine now, and returns the first
// error the OS gave. After Purge a stale access to memory freed before it
// may no longer fault. It is for an allocator going out of use: its
// quarantine is otherwise kept until the process exits.
func (a *Allocator) Purge() error { return a.evict(0) }

// ReadStats fills *s with the allocator's own totals: InUseBytes the bytes
// of its live mappings (rounded to pages, guard pages not counted),
// ReservedBytes those and the bytes held in its quarantine, LiveObjects its
// live mappings, Allocs and Frees its successful calls, Failures the
// mappings the OS or the budget refused, Releases the [Release] calls on
// its mappings, BadFrees its rejected Frees; Grows equals Allocs. It does
// not allocate and takes one short lock.
func (a *Allocator) ReadStats(s *stats.Stats) {
	s.Reset()
	table.mu.Lock()
	defer table.mu.Unlock()
	s.InUseBytes = a.mapped
	s.ReservedBytes = a.mapped + uint64(a.qBytes)
	s.LiveObjects = uint64(a.live)
	s.Allocs = a.allocs
	s.Frees = a.frees
	s.Failures = a.failures
	s.Grows = a.allocs
	s.Releases = a.releases
	s.BadFrees = a.badFrees
}
