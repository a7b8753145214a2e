// Package keep is how buffer, a pool built on a bytepool.Pool, keeps a
// Buffer's storage with its idle header (as bytebufferpool's ByteBuffer
// does) while bytepool counts the storage as put back and can still catch
// a second Put of it. The two operations are bytepool's own, reached
// through this internal package so that they are no part of bytepool's API.
//
// bytepool sets Keep and Reuse when it is initialized; buffer imports
// bytepool, so they are set before buffer can call them. Each is one
// indirect call to bytepool's code.
package keep

// Keep is Put for a pool built on the bytepool.Pool pool that holds idle
// buffers itself: it counts b as put back and marks it idle (so a Put or a
// second Keep of it panics as a double free), but leaves it with the
// caller, which must call Reuse before it writes to b again, and may
// instead drop it, for the GC to collect. It reports false, doing nothing,
// unless the pool is Elastic, neither zeroing nor checked, and b a buffer
// of a class in the pool's lookup table (up to 64 KiB by default): the
// caller then calls Put. It costs a class lookup and the idle mark, no
// sync.Pool operation.
var Keep func(pool any, b []byte) bool

// Reuse is Get of a buffer the caller kept with Keep: it counts b as
// handed out again, clears its idle mark, and returns it with length 0 and
// true. If b's idle mark is gone (something wrote into it after Keep) it
// returns nil and false, counting nothing: the caller must then drop b,
// which the GC collects.
var Reuse func(pool any, b []byte) ([]byte, bool)
