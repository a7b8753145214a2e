package bytepool

import (
	"io"

	"github.com/memkit/memkit/buffer"
)

// Item is Viki's fixed-capacity byte buffer checked out of a Pool: written
// with Write, WriteString, WriteByte and ReadFrom, read with Read (which
// leaves the bytes in place) and Bytes, and given back with Close.
//
// An Item is not safe for concurrent use; give each goroutine its own.
// The zero value is not usable: get one from Pool.Checkout. Its storage is
// the pool's and is not zeroed: Raw shows what earlier users wrote past the
// length. Every method but ReadFrom costs a copy of the bytes it moves and
// never allocates (an Expand item growing past its capacity takes larger
// storage from bytepool). After Close, an Item must not be used: every
// method but Close panics with "memkit/vikibytepool: use of an Item after
// Close; Checkout another" (Viki's gave a nil-pointer panic), and a second
// Close returns buffer.ErrClosed.
type Item struct {
	b    *buffer.Buffer
	read int
}

// Write appends p and returns len(p), nil; a Strict item without room
// writes nothing and returns 0, io.ErrShortWrite.
func (item *Item) Write(p []byte) (int, error) { return item.buf().Write(p) }

// WriteByte appends c. It returns nil, or io.ErrShortWrite for a full
// Strict item. Viki's returned a bool (true when written); this one is
// io.ByteWriter's, which go vet requires of a method of this name, so a
// program that tested the bool tests err == nil instead.
func (item *Item) WriteByte(c byte) error { return item.buf().WriteByte(c) }

// WriteString appends s and returns len(s); a Strict item without room
// writes nothing and returns 0.
func (item *Item) WriteString(s string) int {
	n, _ := item.buf().WriteString(s)
	return n
}

// ReadFrom appends what r yields until io.EOF (not returned) or another
// error (returned). A Strict item that fills up keeps what fit and returns
// io.ErrShortWrite, where Viki's returned nil.
func (item *Item) ReadFrom(r io.Reader) (int64, error) { return item.buf().ReadFrom(r) }

// Read copies the bytes not read yet into p. As in Viki's, the bytes stay in
// the item (Bytes still returns them), and the read that reaches the end
// returns io.EOF with its bytes: (n, io.EOF), then (0, io.EOF).
func (item *Item) Read(p []byte) (int, error) {
	data := item.buf().Bytes()
	n := copy(p, data[item.read:])
	item.read += n
	if item.read == len(data) {
		return n, io.EOF
	}
	return n, nil
}

// Bytes returns the item's bytes, valid until the next write, Position or
// Close.
func (item *Item) Bytes() []byte { return item.buf().Bytes() }

// Raw returns the item's whole storage, its length the capacity: the bytes
// written and, after them, what earlier users left. Write into it and call
// Position to make the bytes part of the item. Valid as Bytes is.
func (item *Item) Raw() []byte { return item.buf().Bytes()[:item.buf().Cap()] }

// String returns a copy of the item's bytes as a string.
func (item *Item) String() string { return string(item.buf().Bytes()) }

// Len returns the number of bytes in the item.
func (item *Item) Len() int { return item.buf().Len() }

// TrimLastIf removes the last byte if it is c, and reports whether it did.
func (item *Item) TrimLastIf(c byte) bool {
	data := item.buf().Bytes()
	if len(data) == 0 || data[len(data)-1] != c {
		return false
	}
	item.setLen(len(data) - 1)
	return true
}

// Position sets the item's length to n, as Viki's: shorter drops the end,
// longer takes the bytes of Raw up to n (written there directly) into the
// item. It reports false, changing nothing, unless 0 <= n <= the capacity.
func (item *Item) Position(n int) bool {
	if n < 0 || n > item.buf().Cap() {
		return false
	}
	item.setLen(n)
	return true
}

// setLen sets the length to n <= Cap, keeping the bytes of the storage.
func (item *Item) setLen(n int) {
	if l := item.buf().Len(); n <= l {
		item.buf().Truncate(n)
	} else {
		// Within the capacity the storage does not move, so writing the
		// storage's own bytes onto themselves only moves the length.
		raw := item.Raw()
		item.buf().Write(raw[l:n])
	}
	item.read = min(item.read, n)
}

// Full reports whether the item's length has reached its capacity (an
// Expand item grows on its next write).
func (item *Item) Full() bool { return item.buf().Len() == item.buf().Cap() }

// Drained reports whether Read has returned every byte of the item.
func (item *Item) Drained() bool { return item.read == item.buf().Len() }

// buf returns the item's buffer, or panics with msgClosed after Close (or
// for an Item not from Checkout): the nil buffer would otherwise end in a
// nil-pointer panic that names nothing.
func (item *Item) buf() *buffer.Buffer {
	if item.b == nil {
		panic(msgClosed)
	}
	return item.b
}

// msgClosed is the panic of any call but Close on an Item or JsonItem after
// Close.
const msgClosed = "memkit/vikibytepool: use of an Item after Close; Checkout another"

// Close empties the item and gives it back to its pool. A second Close
// returns buffer.ErrClosed and changes nothing.
func (item *Item) Close() error {
	b := item.b
	if b == nil {
		return buffer.ErrClosed
	}
	item.b, item.read = nil, 0
	return b.Close()
}
