// Package buffer holds the byte buffers built on bytepool: a pooled,
// growable [Buffer]; [FixedPool], a fixed count of fixed-size buffers
// checked out and closed (Viki's bytepool); [JSON], a writer of correct JSON
// into a Buffer without allocating; and [Slice] and [Reader], a list of
// segments read as one stream without copying (gomem's Memory and
// MemoryReader).
//
//	b := buffer.Get()        // storage from bytepool on the first write
//	j := buffer.NewJSON(b)   // a value, on the stack
//	j.BeginArray()
//	j.Int(1)
//	j.EndArray()
//	w.Write(b.Bytes())
//	b.Free()                 // storage back to bytepool
//
// # Buffers
//
// A [Buffer] has bytes.Buffer's methods (io.Writer, io.StringWriter,
// io.ByteWriter, io.ReaderFrom, io.WriterTo, io.Reader, fmt.Stringer) and
// strconv's appenders. [Get] and [Pool.Get] recycle its header; its storage
// comes from bytepool, sized by a default that calibrates itself to what
// the program writes (see [Pool]), and goes back there on [Buffer.Free].
// Idle storage and idle headers go back to the GC after a burst, within a
// few GC cycles: nothing stays pinned.
//
// A [FixedPool] reserves count buffers of size bytes at [NewFixedPool].
// [FixedPool.Checkout] never blocks: when all are out it hands out a fresh
// buffer the pool does not keep (a miss). A write past the size follows the
// pool's [Overflow] policy — [Expand] onto the heap or [Strict] refusal
// with io.ErrShortWrite — and is never truncated silently.
// [Buffer.Close] gives a buffer back; a second Close returns [ErrClosed]
// and leaves the pool unchanged.
//
// # JSON
//
// [JSON] places commas and colons itself, escapes strings exactly as
// encoding/json does (HTML-safe by default), formats numbers and times as
// encoding/json does, and refuses — recording an error for [JSON.Err] —
// every call that would make the output invalid: a mismatched End, a Key
// outside an object, a NaN. Its output for an accepted sequence of calls is
// byte for byte what json.Marshal writes for the same values.
//
// # Slices and readers
//
// A [Slice] references segments without copying them and writes them out
// with writev on a network connection; it may own segments from bytepool
// and return them on [Slice.Free]. A [Reader] reads across the segments
// with no allocation per call: views into a segment where the bytes lie in
// one, fixed-size integers in both byte orders, varints and LEB128, and
// io.EOF or io.ErrUnexpectedEOF — never a panic — when the input is short.
//
// # Misuse
//
//   - A negative size or count panics: "memkit/buffer: negative size",
//     "memkit/buffer: negative read count".
//   - Freeing a Buffer from Get or Checkout twice panics with
//     "memkit/buffer: double free" (Close returns [ErrClosed] instead), as
//     long as the Buffer was not handed out again in between: the check is
//     a state word, O(1). A FixedPool checks exactly, under the buffer's
//     shard lock, and alternates two headers per buffer, so a stale Close
//     is caught even after one more checkout.
//   - Using a Buffer after Free or Close is a bug the release build does
//     not detect (a FixedPool buffer is at least detached from its storage
//     at Close). Built with the memkitdebug tag, every method then panics
//     with "memkit/buffer: use of a Buffer after Free or Close", and no
//     header is ever reused.
//
// # Statistics
//
// [Pool.ReadStats] reports the bytepool storage its Buffers hold;
// [FixedPool.ReadStats] reports checkouts, closes, misses (HeapFallbacks),
// expansions (Grows), refusals of the Strict policy (Failures) and second
// Closes (BadFrees), counted per shard under the shard's lock, never in a
// word every goroutine writes.
package buffer
