package ringbuf

import "errors"

// ErrFull is returned by [Ring.Write] under the [Reject] policy when every
// slot holds a record. The ring is unchanged.
var ErrFull = errors.New("memkit/ringbuf: ring is full")

// ErrTooLarge is returned by [Ring.Write] for a record longer than a slot.
// The ring is unchanged: a record is never truncated.
var ErrTooLarge = errors.New("memkit/ringbuf: record larger than a slot")

const (
	msgShortRead   = "memkit/ringbuf: Read buffer shorter than a slot"
	msgNotReserved = "memkit/ringbuf: Commit of a slot not reserved"
	msgNotPeeked   = "memkit/ringbuf: Release of a slot not peeked"
	msgNegative    = "memkit/ringbuf: negative size"
	msgNilContext  = "memkit/ringbuf: nil Context"
)

const msgCommitRange = "memkit/ringbuf: Commit length outside the slot"
