// Package buffer is for building and reading bytes: a response, a
// request body, a message, a JSON document. Pick it over bytes.Buffer when
// such buffers are made often enough that their garbage shows (a [Buffer]
// from [Get] recycles its header and storage, 0 allocations per use), over
// a sync.Pool of *bytes.Buffer when buffers should size themselves to what
// the program writes and let idle memory go after a burst, and over
// bytepool when you want an io.Writer with bytes.Buffer's methods rather
// than a bare []byte (bytepool is its storage). [FixedPool] is for a fixed
// memory footprint: count buffers of one size reserved up front, checked
// out and closed, never truncating. [JSON] writes correct JSON into a
// Buffer without allocating, and [Slice] and [Reader] read a list of
// segments as one stream without copying (gomem's Memory and
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
// A [Buffer] has every method of bytes.Buffer, with its behaviour and
// errors (io.Reader, io.ByteScanner, io.RuneScanner, io.WriterTo,
// io.Writer, io.StringWriter, io.ByteWriter, io.ReaderFrom, fmt.Stringer;
// the standard library's tests of bytes.Buffer run against it, and
// Buffer's doc lists what differs), and strconv's appenders. [Get] and [Pool.Get] recycle its header; its storage
// comes from bytepool, sized by a default that calibrates itself to what
// the program writes (see [Pool]), and goes back there on [Buffer.Free].
// Idle storage and idle headers go back to the GC after a burst (headers
// and the storage they keep within a few GC cycles, larger storage within
// bytepool's two retention periods): nothing stays pinned.
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
// byte for byte what json.Marshal writes for the same values, float32s
// ([JSON.Float32]) and json.RawMessages ([JSON.Raw]: compacted and
// escaped) included.
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
//   - A size the system cannot serve now, in [GetSize] or a Buffer's
//     growth, panics with bytes.ErrTooLarge, as bytes.Buffer does, the
//     Buffer unchanged: the size is asked of the kernel before anything is
//     reserved, so it never ends the process with the runtime's fatal
//     out-of-memory.
//   - Freeing a Buffer from Get or Checkout twice panics with
//     "memkit/buffer: double free" (Close returns [ErrClosed] instead), as
//     long as the Buffer was not handed out again in between: the check is
//     a state word, O(1). A FixedPool checks exactly, with the
//     compare-and-swap that gives the buffer back, and alternates two
//     headers per buffer, so a stale Close is caught even after one more
//     checkout; after two, the stale header serves the new owner and its
//     Close cannot be told from the owner's (only the checked build sees
//     it).
//   - Using a Buffer after Free or Close is a bug the release build does
//     not detect (a FixedPool header is at least detached from its storage
//     by the buffer's next checkout, and from expanded storage at Close).
//     The checked build reports it.
//
// # Checked build
//
// Built with -tags memkitdebug, a [Pool] and a [FixedPool] record every
// Buffer they hand out (its header's address and the stack of the Get or
// Checkout), never reuse a header, and turn each of these mistakes into a
// panic whose value, an error (a *memkit.Misuse), names the
// allocator ("buffer"), the operation and the kind of mistake —
// "memkit/buffer: Free: double free at 0x..." — and prints the stacks that
// explain it:
//
//   - a second Free (DoubleFree, with the stacks of the Get and of the first
//     Free), however late: the header is never handed out again. A second
//     Close is no mistake: it returns [ErrClosed] as in the release build;
//   - a Free or Close of a copy of a Buffer (ForeignFree), which would hand
//     back storage the original still uses;
//   - any method call on a Buffer after its Free or Close, the JSON writer's
//     included (StaleHandle, "use of a Buffer after Free or Close", with
//     the stacks of its Get and Free);
//   - a write through a view kept after a FixedPool buffer's Close
//     (UseAfterFree): Close fills the storage with poison and holds the
//     buffer in a quarantine (checked.QuarantineBytes, 4 MiB, or 4096
//     buffers); the poison is checked when the buffer leaves it (Checkout
//     lets the quarantine go before it would miss), when it is checked
//     out, and by memkit.Leaks, naming the byte and the previous owner's
//     stacks. A Pool's storage is bytepool's, whose checked build does the
//     same (its reports name the allocator "bytepool");
//   - a write past a FixedPool buffer's capacity, which only unsafe code can
//     make (Overflow): each buffer is followed by 16 guard bytes, checked at
//     Close;
//   - [Slice.PushOwned] of a slice that is not a live buffer of
//     bytepool.Default with the start and capacity Get gave it (MovedFree,
//     DoubleFree or ForeignFree), reported at the push rather than at the
//     Free that would put it back.
//
// memkit.Leaks(pool) lists the Buffers a Pool (buffer.Default() included)
// or a FixedPool handed out and has not had back, with the stacks of their
// Get or Checkout. A Buffer's storage then comes from bytepool a whole
// class at a time, since a Buffer writes up to its capacity. The checked
// build costs two stack captures and a map update per Get, Checkout, Free
// and Close (and bytepool's, for the storage), a fresh header per Get, and
// a fill and a scan of a FixedPool buffer per Close and Checkout: a
// Get/Free or Checkout/Close pair takes microseconds instead of
// nanoseconds, hundreds of times slower than the release build, which pays
// nothing for any of it (the checks are behind a constant). Use it in tests
// and staging, not in production.
//
// # Options
//
// [NewPool] takes [PoolOption]s and [NewFixedPool] [FixedOption]s; the
// options both read ([WithBytePool], [WithBudget], [WithBudgetAlert]) are
// [CommonOption]s, of both types, so the compiler refuses an option the
// constructor would not read ([WithDefaultSize] for a FixedPool,
// [WithOverflow] for a Pool).
//
// # Budgets
//
// A FixedPool's count×size bytes are reserved at [NewFixedPool]; [WithBudget]
// bounds what its misses and expansions take from the heap on top (at the
// budget an expansion is refused as [Strict] refuses, and
// [FixedPool.TryCheckout] reports false), and [WithBudgetAlert] calls back
// when that crosses a threshold. A Pool's budget is its bytepool's. Both
// are charged on slow paths only: the Checkout and Close of a reserved
// buffer never touch them.
//
// # Statistics
//
// [Pool.ReadStats] reports the bytepool storage its Buffers hold;
// [FixedPool.ReadStats] reports checkouts, closes, misses (HeapFallbacks),
// expansions (Grows), refusals of the Strict policy (Failures) and second
// Closes (BadFrees), all exact: checkouts are counted in each buffer's word
// by the compare-and-swap that takes the buffer (closes are the checkouts
// less the buffers out), the rest on slow paths; nothing is counted in a
// word every goroutine writes.
package buffer
