// Package snapshot lets the one goroutine that owns an allocator publish
// its figures to readers on any goroutine, without atomics on the owner's
// hot path: the owner copies plain counters into atomics now and then, and
// a reader can ask it to do so soon.
package snapshot

import (
	"runtime"
	"sync/atomic"
)

// Seq is a sequence lock with a reader's request attached. The owner, its
// only writer, brackets each publication with BeginWrite and EndWrite,
// which make the sequence odd while it stores; a reader brackets its loads
// with BeginRead and Retry, so that the values it keeps are of one moment.
// The zero value is ready to use. It must not be copied.
type Seq struct {
	seq  atomic.Uint64
	want atomic.Bool
}

// Asked reports whether a reader asked for fresh figures since the last
// publication. The owner checks it from time to time (one load).
func (s *Seq) Asked() bool { return s.want.Load() }

// BeginWrite starts a publication. Only the owner calls it.
func (s *Seq) BeginWrite() { s.seq.Add(1) }

// EndWrite ends a publication and answers any request.
func (s *Seq) EndWrite() {
	s.seq.Add(1)
	s.want.Store(false)
}

// BeginRead returns the sequence to pass to Retry once the reader has
// loaded the published values, waiting while the owner is publishing (it
// yields the processor after a few tries).
func (s *Seq) BeginRead() uint64 {
	for try := 0; ; try++ {
		if v := s.seq.Load(); v&1 == 0 {
			return v
		}
		if try >= 4 {
			runtime.Gosched()
		}
	}
}

// Retry reports whether the values loaded since BeginRead returned v may
// mix two publications, so that the reader must load them again.
func (s *Seq) Retry(v uint64) bool { return s.seq.Load() != v }

// Settle asks the owner for fresh figures and waits a few scheduler yields
// for a publication: an owner making calls answers soon; an idle one does
// not, and the reader takes what is published (the request stands, so the
// owner's next check answers it and later readers do not wait again).
func (s *Seq) Settle() {
	if s.want.Load() {
		return // asked before and not answered yet: the owner is idle
	}
	v := s.seq.Load()
	s.want.Store(true)
	for range 8 {
		if s.seq.Load() != v {
			return
		}
		runtime.Gosched()
	}
}

// Store publishes vals into dst, element by element, as one publication:
// a reader's [Seq.Load] sees all of vals or none of them. Only the owner
// calls it.
func (s *Seq) Store(dst []atomic.Uint64, vals []uint64) {
	s.BeginWrite()
	for i := range vals {
		dst[i].Store(vals[i])
	}
	s.EndWrite()
}

// Load copies src into vals, all from one publication of [Seq.Store].
func (s *Seq) Load(src []atomic.Uint64, vals []uint64) {
	for {
		v := s.BeginRead()
		for i := range vals {
			vals[i] = src[i].Load()
		}
		if !s.Retry(v) {
			return
		}
	}
}
