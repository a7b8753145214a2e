// Package bytepool is a drop-in replacement for github.com/viki-org/bytepool
// (karlseguin/bytepool v1 as Viki forked it) built on memkit's
// [buffer.FixedPool] and [buffer.JSON]: the same package name, New,
// Checkout, Item with every method, NewJson and JsonItem with its writers.
// Use it to move a Viki bytepool program to memkit by changing only the
// import path; new code should use buffer itself. Despite the name it is
// not memkit's bytepool.
//
//	import "github.com/viki-org/bytepool"                         // before
//	import bytepool "github.com/memkit/memkit/compat/vikibytepool" // after
//
// Nothing is truncated silently: a write past an item's capacity grows it
// or is refused, as the pool's [Overflow] says. Item.WriteByte returns an
// error, not a bool: the one signature change. docs/migrating.md in the
// repository lists every difference.
package bytepool
