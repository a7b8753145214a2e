package bytepool

import (
	"unsafe"

	"github.com/memkit/memkit/internal/keep"
)

// buffer.Pool keeps a Buffer's storage with its idle header: it reads a
// pool's Keeper (internal/keep), which Of gives, rather than call methods
// of bytepool's API.
func init() {
	keep.Of = func(pool any) *keep.Keeper { return &pool.(*Pool).keeper }
}

// newKeeper fills p's Keeper: what internal/keep reads to mark, count and
// take back a kept buffer as p's Put and Get would. A pool that is not
// plain (Bounded, zeroing, or any pool in the checked build) keeps
// nothing: its Keeper's zero TabEnd refuses every Keep.
func (p *Pool) newKeeper() {
	if !p.plain || p.tab == nil {
		return
	}
	p.keeper = keep.Keeper{
		TabEnd:     p.tabEnd,
		Tab:        p.tabBase,
		Secret:     p.secret,
		SampleSeed: p.sampleSeed,
		SampleMax:  p.sampleMax,
		Classes:    p.elasticBase,
		Stride:     elasticStride,
		GetsOff:    unsafe.Offsetof(elasticFields{}.gets),
		PutsOff:    unsafe.Offsetof(elasticFields{}.puts),
	}
}
