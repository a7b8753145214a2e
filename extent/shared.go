package extent

import (
	"sync"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/stats"
)

// Shared is an [Allocator] behind a mutex, for programs that allocate on
// one goroutine and free on another (Monibuca frees frames on other
// goroutines than the ones that allocate them).
//
// A Shared is safe for concurrent use by multiple goroutines. The zero value
// is not usable: a Shared must be created with [NewShared]. It must not be
// copied. Each call costs the Allocator's plus one uncontended lock and
// unlock (about 10-20 ns); under contention goroutines wait for each other,
// so a goroutine with a hot loop is better served by an Allocator of its own.
// [Shared.Borrow] memory is shared by every goroutine until the next
// [Shared.Recycle], whichever goroutine calls it: the goroutines must agree
// on when that is (a [Recyclable] per batch frees a batch without such an
// agreement). Memory, overhead and zeroing are the Allocator's.
type Shared struct {
	mu sync.Mutex
	a  *Allocator
}

// NewShared returns a goroutine-safe allocator configured by opts, or an
// error naming the first invalid option.
func NewShared(opts ...Option) (*Shared, error) {
	a, err := New(opts...)
	if err != nil {
		return nil, err
	}
	s := &Shared{a: a}
	if checked.Enabled {
		checked.Register(s, a.dbg.tr)
	}
	return s, nil
}

// Malloc is [Allocator.Malloc] under the lock.
func (s *Shared) Malloc(n int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.a.Malloc(n)
}

// TryMalloc is [Allocator.TryMalloc] under the lock.
func (s *Shared) TryMalloc(n int) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.a.TryMalloc(n)
}

// Free is [Allocator.Free] under the lock; any goroutine may free memory
// any other allocated.
func (s *Shared) Free(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.a.Free(b)
}

// FreeRest is [Allocator.FreeRest] under the lock.
func (s *Shared) FreeRest(b []byte, keep int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.a.FreeRest(b, keep)
}

// Borrow is [Allocator.Borrow] under the lock: n bytes of scratch memory,
// valid until the next [Shared.Recycle] by any goroutine. Borrowed memory
// must not be freed. It costs the bump of Allocator.Borrow plus the lock.
func (s *Shared) Borrow(n int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.a.Borrow(n)
}

// Recycle is [Allocator.Recycle] under the lock: it ends every Borrow
// since the previous Recycle, made on any goroutine. No goroutine may use
// memory it borrowed before the Recycle once Recycle has started, so call
// it when every borrower is done (at the end of a frame, after a
// sync.WaitGroup's Wait). Allocations from Malloc are not affected.
func (s *Shared) Recycle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.a.Recycle()
}

// Trim is [Allocator.Trim] under the lock.
func (s *Shared) Trim() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.a.Trim()
}

// Close is [Allocator.Close] under the lock.
func (s *Shared) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.a.Close()
}

// ReadStats fills *st with a snapshot of exact figures: it publishes them
// under the lock, as [Allocator.PublishStats] does, and reads them.
func (s *Shared) ReadStats(st *stats.Stats) {
	s.mu.Lock()
	s.a.PublishStats()
	s.mu.Unlock()
	var v [nPub]uint64
	s.a.pub.load(&v)
	fill(st, &v)
}
