package buffer

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by [Buffer.Close] for a Buffer already closed or
// freed. Nothing changes: the pool does not take the buffer back twice.
var ErrClosed = errors.New("memkit/buffer: Buffer already closed")

// ErrJSON is matched, with [errors.Is], by every error a [JSON] writer
// records for a call that would make its output invalid: a mismatched End, a
// Key outside an object, a value where a key is due, a second top-level
// value, nesting deeper than [MaxJSONDepth], a Raw value that is not JSON, or
// a document left unfinished.
var ErrJSON = errors.New("memkit/buffer: invalid JSON call sequence")

// ErrNonFinite is the error a [JSON] writer records for a NaN or infinite
// float, which JSON cannot represent (encoding/json refuses them too).
var ErrNonFinite = errors.New("memkit/buffer: JSON cannot represent NaN or infinity")

// ErrOverflow is returned by [Reader.Uvarint] and [Reader.Varint] for a
// varint that does not fit in 64 bits. The position is unchanged.
var ErrOverflow = errors.New("memkit/buffer: varint overflows a 64-bit integer")

// ErrUnread is returned by [Reader.Unread] and [Reader.UnreadByte] when asked
// to go back past the start of the Slice. The position is unchanged.
var ErrUnread = errors.New("memkit/buffer: Unread before the start of the Slice")

// jsonError is a JSON call-sequence error: a constant string, so recording
// one does not allocate.
type jsonError string

func (e jsonError) Error() string   { return "memkit/buffer: JSON: " + string(e) }
func (e jsonError) Is(t error) bool { return t == ErrJSON }

const (
	errEndArray    = jsonError("EndArray without an open array")
	errEndObject   = jsonError("EndObject without an open object")
	errEndAfterKey = jsonError("EndObject after a Key with no value")
	errKeyOutside  = jsonError("Key outside an object")
	errKeyAfterKey = jsonError("Key after a Key with no value")
	errNeedKey     = jsonError("value in an object without a Key")
	errSecondValue = jsonError("second top-level value")
	errDepth       = jsonError("nesting deeper than MaxJSONDepth")
	errEmpty       = jsonError("no value written")
	errUnclosed    = jsonError("unclosed array or object")
	errTimeRange   = jsonError("Time outside years 0-9999 or with a zone offset of a day or more")
)

// Panic messages, exact, so that tests and callers can match them.
const (
	msgNegative    = "memkit/buffer: negative size"
	msgDoubleFree  = "memkit/buffer: double free"
	msgTruncate    = "memkit/buffer: Truncate out of range"
	msgNegativeCnt = "memkit/buffer: negative read count"
	msgBadWrite    = "memkit/buffer: invalid Write count"
)

// Errors a Buffer panics with or returns where bytes.Buffer has errors of
// its own (its too-large panic is bytes.ErrTooLarge itself).
var (
	errNegativeRead = errors.New("memkit/buffer: reader returned negative count from Read")
	errBadRead      = errors.New("memkit/buffer: reader returned more bytes than the slice it was given holds")
	errUnreadRune   = errors.New("memkit/buffer: UnreadRune: previous operation was not a successful ReadRune")
	errUnreadByte   = errors.New("memkit/buffer: UnreadByte: previous operation was not a successful read")
)

func errorf(format string, args ...any) error { return fmt.Errorf("memkit/buffer: "+format, args...) }
