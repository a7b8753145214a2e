// Package keep is how buffer, a pool built on a bytepool.Pool, keeps a
// Buffer's storage with its idle header (as bytebufferpool's ByteBuffer
// does) while bytepool counts the storage as put back and can still catch
// a second Put of it: bytepool's idle mark and its sampled counts, in one
// home that both packages use, and no part of bytepool's API.
//
// bytepool gives a pool's [Keeper] through [Of], which it sets when it is
// initialized (buffer imports bytepool, so Of is set before buffer can call
// it). A Keeper's Keep and Reuse are small enough to inline into buffer's
// Free and Get: no call, no interface.
package keep

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/shard"
)

// Of returns the Keeper of the bytepool.Pool pool. Set by bytepool.
var Of func(pool any) *Keeper

// Keeper is what Keep and Reuse read of an Elastic bytepool.Pool that
// neither zeroes nor checks, copied when the pool is made; the zero Keeper
// (any other pool) keeps nothing. It never changes once the pool is made,
// so a user may hold a copy (one load fewer per use than through the
// pointer Of returns), and may lower the copy's TabEnd to keep only
// smaller buffers.
type Keeper struct {
	// TabEnd bounds the capacities Keepable takes: the pool's lookup table's
	// end (0 for a pool whose buffers cannot be kept); Tab is the table,
	// one class index per 8 bytes of capacity.
	TabEnd uint
	Tab    unsafe.Pointer
	// Secret is the pool's idle-mark secret (see [MarkIdle]).
	Secret uint64
	// The sample (see [Sampled]), and where a class's sampled counts are:
	// class c's Gets at Classes + c*Stride + GetsOff, its Puts at +PutsOff,
	// each an atomic.Uint64.
	SampleSeed, SampleMax uintptr
	Classes               unsafe.Pointer
	Stride                uintptr
	GetsOff, PutsOff      uintptr
}

// MarkIdle marks the buffer at ptr idle, panicking with msg if it already
// is: it writes a word derived from the buffer's address and secret into
// its first 8 bytes. A Put that finds the word already there is a second
// Put of a buffer still idle; the odds that a user's own bytes equal it by
// chance are 2^-64.
func MarkIdle(ptr unsafe.Pointer, secret uint64, msg string) {
	w := (*[8]byte)(ptr)
	want := idleMark(ptr, secret)
	if binary.NativeEndian.Uint64(w[:]) == want {
		panic(msg)
	}
	binary.NativeEndian.PutUint64(w[:], want)
}

// idleMark is the word MarkIdle and Keep write into the buffer at ptr.
func idleMark(ptr unsafe.Pointer, secret uint64) uint64 { return uint64(uintptr(ptr)) ^ secret }

// start is the address of b's storage, which the idle mark's word begins.
func start(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b[:cap(b)])) }

// ClearIdle clears the idle mark of a buffer being handed out.
func ClearIdle(ptr unsafe.Pointer) { *(*[8]byte)(ptr) = [8]byte{} }

// Sampled reports whether the buffer at ptr is in the sample of a pool of
// seed and bound max: whether the hash of its address plus seed is at most
// max.
func Sampled(ptr unsafe.Pointer, seed, max uintptr) bool {
	return shard.Mix(uintptr(ptr)+seed) <= max
}

// Keep is Put for a caller that holds the idle buffer b itself: it marks
// b idle (so a Put of it panics as a double free), but leaves it with the
// caller, which must call Reuse before it writes to b again, and may
// instead drop it, for the GC to collect; the caller then calls Kept, which
// counts b as put back. b must be a buffer Get of the pool returned, whole,
// and Keepable must have reported true for it.
func (k *Keeper) Keep(b []byte) {
	ptr := start(b)
	*(*uint64)(ptr) = idleMark(ptr, k.Secret)
}

// Keepable reports whether Keep may keep b: false when the pool keeps
// nothing, when b's capacity is past the lookup table, or when b is marked
// idle already; the caller then calls Put instead, which panics in the last
// case. Keepable, Keep and Kept are three calls so that each inlines into
// the caller and the caller branches on Keepable's condition itself (a
// Keep that reported it made the compiler materialize a bool and test it).
func (k *Keeper) Keepable(b []byte) bool {
	ptr := start(b)
	return uint(cap(b)) < k.TabEnd && *(*uint64)(ptr) != idleMark(ptr, k.Secret)
}

// InSample reports whether b, a buffer Get of the pool returned, whole, is
// in the pool's sample: whether Kept and Reused count it. It depends on b's
// address only, so a caller that holds b across many Keeps and Reuses asks
// once, when it takes b, and passes the answer to each.
func (k *Keeper) InSample(b []byte) bool {
	return Sampled(start(b), k.SampleSeed, k.SampleMax)
}

// Kept counts b, which Keep marked, as put back: one atomic add on its
// class's count if b is in the sample (sampled, as InSample reported),
// nothing else.
func (k *Keeper) Kept(b []byte, sampled bool) {
	if sampled {
		k.counter(cap(b), k.PutsOff).Add(1)
	}
}

// Reuse is Get of a buffer the caller kept with Keep: it clears its idle
// mark and reports true; the caller then calls Reused, which counts b as
// handed out again. If b's idle mark is gone (something wrote into it
// after Keep) it reports false: the caller must then drop b, which the GC
// collects, and count nothing.
func (k *Keeper) Reuse(b []byte) bool {
	ptr := start(b)
	w := (*uint64)(ptr)
	if *w != idleMark(ptr, k.Secret) {
		return false
	}
	*w = 0
	return true
}

// Reused counts b, which Reuse took back, as handed out, if sampled (as
// InSample reported).
func (k *Keeper) Reused(b []byte, sampled bool) {
	if sampled {
		k.counter(cap(b), k.GetsOff).Add(1)
	}
}

// counter returns the sampled count at off of the class of size bytes.
func (k *Keeper) counter(size int, off uintptr) *atomic.Uint64 {
	c := *(*uint8)(unsafe.Add(k.Tab, uint(size+7)/8))
	return (*atomic.Uint64)(unsafe.Add(k.Classes, uintptr(c)*k.Stride+off))
}
