package ringbuf

import (
	"context"
	"sync"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/ptrfree"
)

// Typed is a [Ring] of fixed-layout records of type T, copied in and out
// by value.
//
// T must hold no Go pointer (no pointer, string, slice, map, channel, func
// or interface, at any depth): [NewTyped] refuses it with an error naming
// the first such field ("memkit/ringbuf: Person2.Name is a string: Go
// pointers cannot live in ringbuf memory"), because the ring's memory is
// not scanned by the GC. Typed is safe for concurrent use by multiple goroutines, is
// not usable as a zero value (create it with NewTyped) and must not be
// copied after first use. Write and Read cost what the Ring's do for a
// record of unsafe.Sizeof(T) bytes and never allocate.
type Typed[T any] struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	r *Ring
}

// NewTyped returns a ring of slots records of type T, configured by opts,
// or an error if T holds Go pointers or slots is out of range.
func NewTyped[T any](slots int, opts ...Option) (*Typed[T], error) {
	if err := ptrfree.Check[T]("ringbuf"); err != nil {
		return nil, err
	}
	var zero T
	r, err := New(slots, max(int(unsafe.Sizeof(zero)), 1), opts...)
	if err != nil {
		return nil, err
	}
	return &Typed[T]{r: r}, nil
}

func bytesOf[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// Write copies v into the ring as its newest record, following the ring's
// policy when full, as [Ring.Write] does.
func (t *Typed[T]) Write(v T) error { return t.r.Write(bytesOf(&v)) }

// WriteContext is Write that, under the [Block] policy, gives up when ctx
// ends, as [Ring.WriteContext] does.
func (t *Typed[T]) WriteContext(ctx context.Context, v T) error {
	return t.r.WriteContext(ctx, bytesOf(&v))
}

// Read removes the oldest record and returns it, or reports false if the
// ring is empty.
func (t *Typed[T]) Read() (v T, ok bool) {
	r := t.r
	pos, ok := r.claimRead()
	if !ok {
		return v, false
	}
	if checked.Enabled {
		r.chk.taken(pos, "Read")
	}
	copy(bytesOf(&v), r.slotMem(pos))
	if checked.Enabled {
		r.chk.freed(pos)
	}
	r.free(pos)
	r.alert()
	return v, true
}

// Ring returns the underlying ring, for its stats and lending methods.
func (t *Typed[T]) Ring() *Ring { return t.r }
