package buffer

import (
	"bytes"
	"io"
	"unicode/utf8"

	"github.com/memkit/memkit/internal/checked"
)

// The reading side of a Buffer, as bytes.Buffer's: each call consumes from
// the front of the unread bytes, and records in lastRead what UnreadByte
// and UnreadRune may undo.

// Read reads up to len(p) unread bytes into p, as bytes.Buffer.Read: when
// nothing is left it empties the buffer and returns io.EOF (0, nil if p is
// empty).
func (b *Buffer) Read(p []byte) (int, error) {
	if checked.Enabled {
		b.check("Read")
	}
	b.lastRead = opInvalid
	if b.off == len(b.buf) {
		b.buf = b.buf[:0]
		b.off = 0
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, b.buf[b.off:])
	b.off += n
	if n > 0 {
		b.lastRead = opRead
	}
	return n, nil
}

// Next returns the next n unread bytes, or all of them if fewer are left,
// and consumes them as [Buffer.Read] would, as bytes.Buffer.Next. The slice
// aliases the storage: it is valid until the next read or write. It panics
// with "memkit/buffer: negative read count" if n < 0.
func (b *Buffer) Next(n int) []byte {
	if checked.Enabled {
		b.check("Next")
	}
	if n < 0 {
		panic(msgNegativeCnt)
	}
	b.lastRead = opInvalid
	n = min(n, len(b.buf)-b.off)
	data := b.buf[b.off : b.off+n]
	b.off += n
	if n > 0 {
		b.lastRead = opRead
	}
	return data
}

// Peek returns the next n unread bytes without consuming them, as
// bytes.Buffer.Peek: all the unread bytes and io.EOF if fewer than n are
// left. The slice aliases the storage: it is valid until the next read or
// write. It panics with "memkit/buffer: negative read count" if n < 0.
func (b *Buffer) Peek(n int) ([]byte, error) {
	if checked.Enabled {
		b.check("Peek")
	}
	if n < 0 {
		panic(msgNegativeCnt)
	}
	if len(b.buf)-b.off < n {
		return b.buf[b.off:], io.EOF
	}
	return b.buf[b.off : b.off+n], nil
}

// ReadByte consumes and returns the next unread byte, or io.EOF if none is
// left (emptying the buffer then, as [Buffer.Read]).
func (b *Buffer) ReadByte() (byte, error) {
	if checked.Enabled {
		b.check("ReadByte")
	}
	if b.off == len(b.buf) {
		b.buf, b.off, b.lastRead = b.buf[:0], 0, opInvalid
		return 0, io.EOF
	}
	c := b.buf[b.off]
	b.off++
	b.lastRead = opRead
	return c, nil
}

// ReadRune consumes and returns the next UTF-8-encoded code point and its
// size, as bytes.Buffer.ReadRune: io.EOF if nothing is left, and
// utf8.RuneError of size 1 for a byte that does not start a valid encoding.
func (b *Buffer) ReadRune() (rune, int, error) {
	if checked.Enabled {
		b.check("ReadRune")
	}
	if b.off == len(b.buf) {
		b.buf, b.off, b.lastRead = b.buf[:0], 0, opInvalid
		return 0, 0, io.EOF
	}
	if c := b.buf[b.off]; c < utf8.RuneSelf {
		b.off++
		b.lastRead = 1
		return rune(c), 1, nil
	}
	r, n := utf8.DecodeRune(b.buf[b.off:])
	b.off += n
	b.lastRead = int8(n)
	return r, n, nil
}

// UnreadRune gives back the rune the last call read, if that call was a
// [Buffer.ReadRune] that succeeded; otherwise it returns an error
// ("memkit/buffer: UnreadRune: previous operation was not a successful
// ReadRune") and changes nothing, as bytes.Buffer.UnreadRune.
func (b *Buffer) UnreadRune() error {
	if checked.Enabled {
		b.check("UnreadRune")
	}
	if b.lastRead <= opInvalid {
		return errUnreadRune
	}
	if b.off >= int(b.lastRead) {
		b.off -= int(b.lastRead)
	}
	b.lastRead = opInvalid
	return nil
}

// UnreadByte gives back the last byte read, if the last call was a read
// that read at least one byte ([Buffer.Read], [Buffer.Next], ReadByte,
// ReadRune, ReadBytes, ReadString); otherwise it returns an error
// ("memkit/buffer: UnreadByte: previous operation was not a successful
// read") and changes nothing, as bytes.Buffer.UnreadByte.
func (b *Buffer) UnreadByte() error {
	if checked.Enabled {
		b.check("UnreadByte")
	}
	if b.lastRead == opInvalid {
		return errUnreadByte
	}
	b.lastRead = opInvalid
	if b.off > 0 {
		b.off--
	}
	return nil
}

// ReadBytes consumes the unread bytes up to and including the first delim
// and returns a copy of them, as bytes.Buffer.ReadBytes: if delim does not
// come, all that is left and io.EOF. The error is nil exactly when the
// result ends in delim. It allocates the copy.
func (b *Buffer) ReadBytes(delim byte) ([]byte, error) {
	if checked.Enabled {
		b.check("ReadBytes")
	}
	line, err := b.readSlice(delim)
	return append([]byte(nil), line...), err
}

// ReadString is [Buffer.ReadBytes] returning a string.
func (b *Buffer) ReadString(delim byte) (string, error) {
	if checked.Enabled {
		b.check("ReadString")
	}
	line, err := b.readSlice(delim)
	return string(line), err
}

// readSlice consumes the unread bytes up to and including the first delim
// and returns them as a view of the storage.
func (b *Buffer) readSlice(delim byte) ([]byte, error) {
	var err error
	end := len(b.buf)
	if i := bytes.IndexByte(b.buf[b.off:], delim); i >= 0 {
		end = b.off + i + 1
	} else {
		err = io.EOF
	}
	line := b.buf[b.off:end]
	b.off = end
	b.lastRead = opRead
	return line, err
}

// WriteTo writes the unread bytes to w until none is left or w fails, as
// bytes.Buffer.WriteTo: the bytes written are consumed, and a short write
// without an error returns io.ErrShortWrite.
func (b *Buffer) WriteTo(w io.Writer) (int64, error) {
	if checked.Enabled {
		b.check("WriteTo")
	}
	b.lastRead = opInvalid
	m := len(b.buf) - b.off
	if m == 0 {
		// Empty: reset, as bytes.Buffer does, so that no unread can bring
		// back a byte read before.
		b.buf = b.buf[:0]
		b.off = 0
		return 0, nil
	}
	n, err := w.Write(b.buf[b.off:])
	if n > m {
		panic(msgBadWrite)
	}
	b.off += n
	if err != nil {
		return int64(n), err
	}
	if n != m {
		return int64(n), io.ErrShortWrite
	}
	b.buf = b.buf[:0]
	b.off = 0
	return int64(n), nil
}
