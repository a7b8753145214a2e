// Package shard is memkit's one sharding primitive: the choice of a shard
// from the calling goroutine's stack address, a one-word spinlock with one
// backoff policy, the search for a free shard when the home one is busy,
// and the padding that keeps neighbouring shards off each other's cache
// lines; and [Idle], the per-P set of idle items whose take and give-back
// take no locked instruction. bytepool, slab, buffer and extent spread
// their goroutine-safe state with it.
//
// A goroutine's stack is its own, so hashing an address on it spreads the
// goroutines running at one moment over the shards, and keeps one
// goroutine's calls on the same, cache-warm shard while its stack stays in
// one 2 KiB window. Any shard can serve any request: a caller whose home
// shard is busy takes the next free one rather than wait.
package shard

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// hashMul is the Fibonacci hashing multiplier (2^64/φ), cut to the word size.
const hashMul = uintptr(0x9E3779B97F4A7C15 & uint64(^uintptr(0)))

// Hint returns a hash of an address on the calling goroutine's stack: 16
// well-mixed bits in the low bits of the result, the same for every call
// made from the same 2 KiB window of one stack. Mask it with a [Count]
// minus one to pick a shard. It inlines to a shift and a multiply.
func Hint() uintptr { return HintWith(0) }

// HintWith is [Hint] with salt mixed into the address before the hash
// (an xor, then the multiply), so that a new salt spreads the goroutines
// afresh: two goroutines whose hints pick one shard under one salt pick
// one under another only by chance. A caller that sees its goroutines'
// shards collide changes its salt.
func HintWith(salt uintptr) uintptr {
	var marker byte
	return ((uintptr(unsafe.Pointer(&marker)) >> 11) ^ salt) * hashMul >> (bits.UintSize - 16)
}

// Count rounds n up to a power of two, at least 1, so that a hint masked
// with Count(n)-1 picks a shard.
func Count(n int) int {
	c := 1
	for c < n {
		c *= 2
	}
	return c
}

// PerP returns perP shards per GOMAXPROCS, at least min, rounded up to a
// power of two.
func PerP(perP, min int) int { return Count(max(perP*runtime.GOMAXPROCS(0), min)) }

// Pad is a cache line of padding: put one after a shard's hot fields so
// that neighbouring shards in an array do not share a line.
type Pad [64]byte

// Lock is a one-word spinlock for state held a few nanoseconds at a time.
// Uncontended, Lock costs one compare-and-swap and Unlock one atomic store
// (on amd64 an XCHG, a locked instruction like the CAS). The
// zero value is unlocked; a Lock must not be copied after first use.
type Lock struct{ v atomic.Uint32 }

// TryLock takes the lock if it is free and reports whether it did.
func (l *Lock) TryLock() bool { return l.v.CompareAndSwap(0, 1) }

// Lock takes the lock, spinning while another holder has it.
func (l *Lock) Lock() {
	if l.v.CompareAndSwap(0, 1) {
		return
	}
	l.lockSlow()
}

// lockSlow spins on a load (not a CAS, which would take the line from the
// holder), and after 16 tries yields the processor on every try: the holder
// may have been preempted.
func (l *Lock) lockSlow() {
	for i := 0; ; i++ {
		if l.v.Load() == 0 && l.v.CompareAndSwap(0, 1) {
			return
		}
		Backoff(i)
	}
}

// Unlock releases the lock.
func (l *Lock) Unlock() { l.v.Store(0) }

// Locked reports whether the lock is held, for tests and assertions.
func (l *Lock) Locked() bool { return l.v.Load() != 0 }

// Backoff is the one wait policy of a spinning loop on try number i (from
// 0): spin for 16 tries, then yield the processor on each.
func Backoff(i int) {
	if i >= 16 {
		runtime.Gosched()
	}
}

// Locker is the constraint of [LockAny]: a pointer to a shard with a
// TryLock method (usually a promoted [Lock]).
type Locker[S any] interface {
	*S
	TryLock() bool
}

// LockAny locks and returns a shard of shards, whose length is a power of
// two, starting at shards[h & (len-1)], the caller's home, and returns the
// hint of the shard it took (h, or h+i for the i-th one after home). If the
// home shard is busy it takes the next free one; when every shard is busy
// it yields the processor and sweeps again. Callers try their home shard's
// TryLock inline and call LockAny only when it fails.
func LockAny[S any, P Locker[S]](shards []S, h uintptr) (*S, uintptr) {
	mask := uintptr(len(shards) - 1)
	for i := uintptr(0); ; i++ {
		s := P(&shards[(h+i)&mask])
		if s.TryLock() {
			return (*S)(s), h + i
		}
		if i&mask == mask {
			runtime.Gosched() // every shard is busy: let a holder run
		}
	}
}

// Mix multiplies x by the Fibonacci hashing constant: its high bits are a
// well-spread hash of x (take them with a right shift). Sampling by
// address uses it, as [Hint] does.
func Mix(x uintptr) uintptr { return x * hashMul }
