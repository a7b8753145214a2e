package buffer

import (
	"bytes"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/keep"
	"github.com/memkit/memkit/internal/sysmem"
	"github.com/memkit/memkit/stats"
)

// Pool hands out [Buffer]s whose storage comes from a bytepool.Pool, and
// takes them back on [Buffer.Free].
//
// A Pool is safe for concurrent use by multiple goroutines. The zero value
// is not usable: a Pool must be created with [NewPool] (or use the default
// one through the package's [Get]). A Pool must not be copied after first
// use.
//
// [Pool.Get] takes a recycled Buffer header (a sync.Pool Get, per P, no
// lock, no atomic). An idle header keeps the storage of its last use (up
// to 64 KiB, and only from an Elastic bytepool, which counts it as given
// back: internal/keep), so a Get+write+Free cycle costs one sync.Pool
// round trip, as bytebufferpool's does, without its shared counter. A
// header without storage, or whose storage is below the pool's default
// size, takes storage from bytepool on its first write, sized by the
// default size; Free returns larger storage to bytepool at once. Once warm,
// none of them allocates. A live Buffer costs its 64-byte
// header and its storage, rounded up to bytepool's class (under 20% more);
// storage is not zeroed. Everything lives on the Go heap; idle headers, with
// the storage up to 64 KiB they keep, go back to the GC within a few GC
// cycles, and larger idle storage as bytepool's retention rule says (within
// two seconds once no Get needs it), so a burst leaves nothing pinned.
//
// # Calibration
//
// The default size follows what the program writes, as bytebufferpool's
// does, without its shared counter on every Put: each Buffer counts its own
// Frees in its header (which only its owner touches), and a Buffer's
// first Free and one in 64 after it add its length to a histogram of
// power-of-two buckets. After 16 samples, and every 128 samples after that,
// the default becomes the bucket of the median length (capped at
// bytepool's largest class) and the histogram is halved, so old samples
// fade. 63 Frees in 64 touch no shared memory for calibration; the 64th
// makes two atomic adds (its bucket and the sample count), so the shared
// words see a thirty-second of the traffic bytebufferpool's counter does
// (and a Free costs a thirty-second of an atomic add for it, where
// bytebufferpool's Put costs one), and the cost of calibration stays flat
// as cores are added. The first calibration comes after 16 Buffers' first
// Frees, or after 961 Frees of one Buffer.
type Pool struct {
	bp *bytepool.Pool
	// keeper is bp's, copied, its TabEnd lowered to keepMax+1: how an idle
	// header keeps its storage, and that it keeps at most keepMax bytes.
	keeper keep.Keeper
	hdrs   sync.Pool
	cal    calibrator       // its size is WithDefaultSize's, if given
	track  *checked.Tracker // checked build only: the Buffers out
}

// NewPool returns a pool configured by opts ([WithBytePool],
// [WithDefaultSize], and [WithBudget] and [WithBudgetAlert] for the
// bytepool it makes when not given one), or an error naming the first
// invalid option.
func NewPool(opts ...PoolOption) (*Pool, error) {
	cfg := newConfig(opts, PoolOption.applyPool)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	bp := cfg.bytes
	if bp != nil && cfg.Any() {
		return nil, errorf("WithBudget and WithBudgetAlert apply to the Pool's own bytepool; with WithBytePool, give them to bytepool.New")
	}
	if bp == nil {
		// Its own bytepool counts exactly: ReadStats is the storage this
		// Pool's Buffers took and gave back.
		bopts := []bytepool.Option{bytepool.WithExactStats()}
		if n := cfg.Limit(); n > 0 {
			bopts = append(bopts, bytepool.WithBudget(n))
		}
		if cfg.HasAlert() {
			bopts = append(bopts, bytepool.WithBudgetAlert(cfg.Alert()))
		}
		var err error
		if bp, err = bytepool.New(bopts...); err != nil {
			return nil, err
		}
	}
	classes := bp.Classes()
	maxSize := classes[len(classes)-1]
	if cfg.setDefault && (cfg.defaultSize < 1 || cfg.defaultSize > maxSize) {
		return nil, errorf("DefaultSize %d must be between 1 and %d", cfg.defaultSize, maxSize)
	}
	p := &Pool{bp: bp, keeper: *keep.Of(bp)}
	p.keeper.TabEnd = min(p.keeper.TabEnd, keepMax+1)
	p.cal.max = int64(maxSize)
	if cfg.defaultSize > 0 {
		p.cal.size.Store(int64(cfg.defaultSize))
		p.cal.fixed = true
	}
	if checked.Enabled {
		p.track = checked.NewTracker("buffer")
		checked.Register(p, p.track)
	}
	return p, nil
}

// Get returns an empty Buffer of the pool. It takes storage of the pool's
// default size on its first write. Give it back with [Buffer.Free].
func (p *Pool) Get() *Buffer {
	// One test of the type word: a nil from an empty sync.Pool fails it.
	b, ok := p.hdrs.Get().(*Buffer)
	if !ok {
		b = &Buffer{pool: p, hdr: true}
	} else if b.owned {
		// The storage it kept, still b.buf[:0] (Free's self-reslice keeps
		// the pointer, so none is stored back: no write barrier), unless
		// it was written after Free: then it is dropped. Storage smaller
		// than the pool now calibrates to goes back too: the first write
		// takes the default size, as documented.
		if !p.keeper.Reuse(b.buf) {
			b.buf, b.owned = nil, false
		} else if p.keeper.Reused(b.buf, b.sampled); cap(b.buf) < p.defaultSize() {
			p.bp.Put(b.buf)
			b.buf, b.owned = nil, false
		}
	}
	b.state, b.lastRead = stLive, opInvalid
	if checked.Enabled {
		p.track.Alloc(uintptr(unsafe.Pointer(b)), 0, checked.SkipWithin(pkgPath))
	}
	return b
}

// GetSize returns an empty Buffer with room for at least n bytes, taken
// from bytepool now (n rounded up to its class). It panics with
// "memkit/buffer: negative size" if n < 0, and with bytes.ErrTooLarge, as
// [Buffer.Grow], if the system cannot serve n bytes now.
func (p *Pool) GetSize(n int) *Buffer {
	if n < 0 {
		panic(msgNegative)
	}
	if !sysmem.Available(uint64(n)) {
		panic(bytes.ErrTooLarge) // asked first: make would end the process
	}
	b := p.Get()
	if n > 0 && cap(b.buf) < n {
		if checked.Enabled {
			n = p.bp.ClassSize(n) // see Buffer.grow
		}
		if b.owned {
			p.bp.Put(b.buf) // the storage the header kept is too small
		}
		b.buf = p.bp.Get(n)[:0]
		b.owned, b.sampled = true, p.keeper.InSample(b.buf)
	}
	if checked.Enabled {
		p.track.Alloc(uintptr(unsafe.Pointer(b)), n, checked.SkipWithin(pkgPath))
	}
	return b
}

// DefaultSize reports the storage a Buffer takes on its first write: the
// calibrated size, 0 before the first calibration (the first write then
// takes what it needs), or the size set by [WithDefaultSize].
func (p *Pool) DefaultSize() int { return p.defaultSize() }

func (p *Pool) defaultSize() int { return int(p.cal.size.Load()) }

// BytePool returns the bytepool.Pool the buffers' storage comes from.
func (p *Pool) BytePool() *bytepool.Pool { return p.bp }

// ReadStats fills *s with the statistics of the pool's storage, as
// bytepool.Pool.ReadStats: an allocation is a storage taken (by a first
// write, a GetSize or a growth), a free one given back, and LiveObjects
// counts the storages Buffers hold. A Buffer that never wrote holds none.
// The bytepool a Pool makes for itself counts every call exactly
// (bytepool.WithExactStats); the default Pool's storage comes from
// bytepool.Default, whose per-call counts are estimated from a sample (see
// bytepool's "Statistics"). With [WithBytePool], the numbers are that
// bytepool's, other users included.
func (p *Pool) ReadStats(s *stats.Stats) { p.bp.ReadStats(s) }

// defaultPool serves the package-level functions; it shares
// bytepool.Default's storage.
var defaultPool = func() *Pool {
	p, err := NewPool(WithBytePool(bytepool.Default()))
	if err != nil {
		panic(err) // the defaults are valid; a test checks it
	}
	return p
}()

// Default returns the pool behind the package-level [Get] and [GetSize]. Its
// storage comes from bytepool.Default.
func Default() *Pool { return defaultPool }

// Get returns an empty Buffer from the default pool; see [Pool.Get].
func Get() *Buffer { return defaultPool.Get() }

// GetSize returns an empty Buffer with room for n bytes from the default
// pool; see [Pool.GetSize].
func GetSize(n int) *Buffer { return defaultPool.GetSize(n) }

// ReadStats reads the default pool's statistics, which are those of
// bytepool.Default; see [Pool.ReadStats].
func ReadStats(s *stats.Stats) { defaultPool.ReadStats(s) }

// calibrator keeps the histogram of sampled Buffer lengths and the default
// size derived from it.
type calibrator struct {
	size  atomic.Int64 // read by every first write: on a line of its own
	max   int64
	fixed bool // size is WithDefaultSize's: calibration leaves it
	_     [47]byte

	counts  [calBuckets]atomic.Uint32
	samples atomic.Uint32
	busy    atomic.Bool
}

const (
	sampleEvery = 64 // a Buffer samples its first storage return and one in sampleEvery after it
	calMinShift = 6  // the smallest bucket holds up to 64 bytes
	calBuckets  = 15 // up to 1 MiB; longer lengths count in the last
	calFirst    = 16 // samples before the first calibration
	calEvery    = 128
)

// record adds a sampled length n.
func (c *calibrator) record(n int) {
	i := 0
	if n > 1<<calMinShift {
		i = min(bits.Len(uint(n-1))-calMinShift, calBuckets-1)
	}
	c.counts[i].Add(1)
	if s := c.samples.Add(1); s == calFirst || s%calEvery == 0 {
		c.calibrate()
	}
}

// calibrate sets the default size to the bucket of the median sample and
// halves the histogram. One goroutine runs it at a time; a sample recorded
// meanwhile may be lost, which only makes the median slightly older.
func (c *calibrator) calibrate() {
	if c.fixed || !c.busy.CompareAndSwap(false, true) {
		return
	}
	var n [calBuckets]uint32
	var total uint64
	for i := range c.counts {
		n[i] = c.counts[i].Load()
		total += uint64(n[i])
	}
	var cum uint64
	for i := range n {
		cum += uint64(n[i])
		if 2*cum >= total {
			c.size.Store(min(int64(1)<<(calMinShift+i), c.max))
			break
		}
	}
	for i := range c.counts {
		c.counts[i].Store(n[i] / 2)
	}
	c.busy.Store(false)
}
