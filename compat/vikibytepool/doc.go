// Package bytepool is a drop-in replacement for github.com/viki-org/bytepool
// (karlseguin/bytepool v1 as Viki forked it) built on memkit's
// [buffer.FixedPool] and [buffer.JSON]: the same package name, New, Checkout,
// Item with every method (Position, TrimLastIf, Full, Drained, Raw, Read
// with Viki's io.EOF, ...), NewJson and JsonItem with its writers. Pick it
// to move a Viki bytepool program to memkit without changing its code; new
// code should use buffer itself (FixedPool for a fixed count of items,
// Pool and Buffer otherwise). Despite the name it keeps from Viki's, it is
// not memkit's bytepool, the size-class []byte pool under buffer; the
// other drop-in packages are goslab, funnyslab and gomem.
//
// Migrating is a change of import path:
//
//	import "github.com/viki-org/bytepool"                         // before
//	import bytepool "github.com/memkit/memkit/compat/vikibytepool" // after
//
// # Differences from Viki's bytepool
//
//   - Nothing is truncated silently. Viki's Write, WriteString and ReadFrom
//     kept what fit and reported success. Here a write that would pass the
//     capacity follows the pool's Overflow option: Expand (the default) moves
//     the item to larger storage and the write succeeds whole; Strict
//     (New(count, capacity, WithOverflow(Strict))) refuses it, writing
//     nothing: Write returns io.ErrShortWrite, WriteString 0, WriteByte
//     io.ErrShortWrite, and ReadFrom keeps what fit and returns io.ErrShortWrite.
//   - JsonItem escapes strings as encoding/json does (control characters,
//     invalid UTF-8, U+2028/U+2029, and <, > and & as \u003c...); Viki escaped
//     only " and \, so a newline in a value made invalid JSON. WriteSafeString
//     and WriteKeySafeString escape too. A call that would make the document
//     invalid (an EndArray without BeginArray, a key outside an object) writes
//     nothing and is reported by JsonItem.Err; Viki wrote it. Times are
//     written as time.Time's MarshalJSON writes them (RFC 3339 with
//     nanoseconds when there are any).
//   - Item.WriteByte returns an error (nil when written), as io.ByteWriter
//     and go vet require, where Viki's returned a bool: the one signature
//     change. A call that ignores the result compiles unchanged.
//   - Close twice returns buffer.ErrClosed and changes nothing (Viki put the
//     item in its pool twice, so two later Checkouts shared it).
//   - JsonItem embeds Item, not *Item: the writers and methods are the same,
//     but code that took the embedded field (jsonItem.Item) gets a value.
//   - Checkout allocates the Item header (about 40 bytes; a JsonItem about
//     110), so that a Close through a stale Item is always refused; the
//     capacity-sized storage comes from the pool without allocating.
package bytepool
