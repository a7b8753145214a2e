package bytepool

import (
	"sync"
	"unsafe"
)

// depot is one class's pool-wide store of idle buffers, behind the shards.
// Shards refill from it and spill to it in batches of half a magazine, so
// its mutex is taken once per batch, not per buffer.
//
// Like sync.Pool it keeps two generations: buffers that sat in primary
// through one GC cycle move to victim, and buffers still in victim at the
// next cycle are dropped to the GC. An idle pool therefore gives back all it
// holds within two to three GC cycles (see [Pool.decay]).
type depot struct {
	mu      sync.Mutex
	primary []unsafe.Pointer
	victim  []unsafe.Pointer

	// Counters guarded by mu: releases done by decay, and the counters that
	// Caches fold in when they refill, spill or are released.
	releases uint64
	allocs   uint64
	frees    uint64
	grows    uint64

	_ [64]byte
}

// take moves up to len(dst) buffers into dst and reports how many.
func (d *depot) take(dst []unsafe.Pointer) int {
	n := 0
	for _, src := range []*[]unsafe.Pointer{&d.primary, &d.victim} {
		k := min(len(*src), len(dst)-n)
		if k == 0 {
			continue
		}
		from := (*src)[len(*src)-k:]
		copy(dst[n:], from)
		clear(from)
		*src = (*src)[:len(*src)-k]
		n += k
	}
	return n
}

// give adds bufs to the depot.
func (d *depot) give(bufs []unsafe.Pointer) {
	d.primary = append(d.primary, bufs...)
}

// rotate drops the victim generation and makes primary the new victim. It
// reports how many buffers it dropped.
func (d *depot) rotate() int {
	dropped := len(d.victim)
	clear(d.victim)
	d.primary, d.victim = d.victim[:0], d.primary
	if cap(d.primary) > 4*len(d.victim)+64 {
		// Do not keep a large pointer array after a burst either.
		d.primary = nil
	}
	return dropped
}
