package buffer

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/sysmem"
)

// A Buffer has the interfaces of a bytes.Buffer, and is an io.Closer.
var (
	_ io.Reader                                 = (*Buffer)(nil)
	_ io.ByteScanner                            = (*Buffer)(nil)
	_ io.RuneScanner                            = (*Buffer)(nil)
	_ io.WriterTo                               = (*Buffer)(nil)
	_ io.Writer                                 = (*Buffer)(nil)
	_ io.StringWriter                           = (*Buffer)(nil)
	_ io.ByteWriter                             = (*Buffer)(nil)
	_ io.ReaderFrom                             = (*Buffer)(nil)
	_ io.Closer                                 = (*Buffer)(nil)
	_ fmt.Stringer                              = (*Buffer)(nil)
	_ interface{ WriteRune(rune) (int, error) } = (*Buffer)(nil)
)

// Buffer is a growable byte buffer whose storage comes from bytepool and
// goes back there on [Buffer.Free]: bytes.Buffer's methods, strconv-style
// appenders, and the Close of a [FixedPool] checkout.
//
// A Buffer is not safe for concurrent use; give each goroutine its own (a
// Buffer may be handed to another goroutine with the usual synchronization,
// and freed there). The zero value is an empty Buffer ready to use: it takes
// storage from the default [Pool]'s bytepool on its first write, and Free
// gives the storage back and leaves it empty and usable again. A Buffer must
// not be copied after first use: two copies would share, and both return,
// one storage.
//
// Writes append in amortized O(1), a copy of the bytes written: when the
// storage is full, the contents move to storage twice as large, taken from
// bytepool, and the old storage goes back to bytepool at once. The first
// write of a Buffer from [Pool.Get] takes storage of the pool's default
// size, calibrated to the lengths Buffers of that pool reach, so that most
// Buffers never move. Storage is rounded up to bytepool's class (under 20%
// waste) and is not zeroed: it holds what its previous user wrote past the
// length. It lives on the Go heap, and idle storage decays back to the GC
// (bytepool's Elastic policy). The header itself (64 bytes on 64-bit
// platforms) is recycled by [Pool.Get], so Get, writes that fit, and Free
// allocate nothing.
//
// # bytes.Buffer's contract
//
// A Buffer has every method of Go 1.26's bytes.Buffer, with its signature,
// behaviour and errors: Available, AvailableBuffer, Bytes, Cap, Grow, Len,
// Next, Peek, Read, ReadByte, ReadBytes, ReadFrom, ReadRune, ReadString,
// Reset, String, Truncate, UnreadByte, UnreadRune, Write, WriteByte,
// WriteRune, WriteString and WriteTo; so it is an io.Reader,
// io.ByteScanner, io.RuneScanner, io.WriterTo, io.Writer, io.StringWriter,
// io.ByteWriter, io.ReaderFrom and fmt.Stringer. Storage it cannot get
// panics with bytes.ErrTooLarge itself, as bytes.Buffer's does. The
// standard library's bytes/buffer_test.go runs against it
// (stdbuffer_test.go), with only construction changed. What differs:
//
//   - There is no NewBuffer or NewBufferString: a Buffer never adopts a
//     caller's slice (its storage comes from bytepool and goes back there);
//     write the bytes into one. Its capacity is a bytepool class, not a
//     slice's capacity. (The port skips TestNewBufferShallow and the two
//     TestCapWith tests for this and the next point.)
//   - A Buffer must not be copied, and one from [Get] or a checkout must not
//     be used after [Buffer.Free] or Close. A view (Bytes, Next, Peek,
//     AvailableBuffer) is valid as bytes.Buffer's is, and never past Free.
//   - A size the system cannot serve now panics with bytes.ErrTooLarge
//     before anything is reserved, where bytes.Buffer would let make end the
//     process with the runtime's fatal out-of-memory.
//   - A [Strict] [FixedPool] buffer refuses a write past the pool's size
//     with io.ErrShortWrite, writing nothing and leaving UnreadByte's state
//     as it was (bytes.Buffer's writes always succeed); its Grow then
//     changes nothing, and it never panics with ErrTooLarge. A FixedPool
//     buffer's ReadFrom fills the storage before it grows (see
//     [Buffer.ReadFrom]).
//   - Panics other than ErrTooLarge begin "memkit/buffer:", not
//     "bytes.Buffer": a reader's negative count in ReadFrom (an error, as
//     bytes.Buffer's, "memkit/buffer: reader returned negative count from
//     Read"; the port's TestReadFromNegativeReader expects that text), a
//     Truncate out of range, a negative Grow ("memkit/buffer: negative
//     size"), and a negative Next or Peek ("memkit/buffer: negative read
//     count", where bytes.Buffer fails with a runtime slice error).
//     UnreadByte's and UnreadRune's errors read as bytes.Buffer's after the
//     prefix.
//   - After a Grow that moved the contents, UnreadByte and UnreadRune
//     return their error; bytes.Buffer's return nil and unread nothing.
//     Whether a Grow moves depends on the capacity, in both.
//   - In the checked build (-tags memkitdebug) taking storage allocates
//     (a stack is recorded), so the port's TestGrow checks no allocations
//     in the release build only.
//
// The appenders (AppendInt and the rest), Free, Close and [JSON] are
// memkit's own.
//
// After Free or Close, a Buffer must not be used: its header may already
// serve another Get. With the memkitdebug build tag, any use then panics
// with a report of a stale handle ("use of a Buffer after Free or Close")
// and the stacks of the Buffer's Get and Free, and headers are never
// reused (see the package's "Checked build").
type Buffer struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	buf  []byte // contents: buf[off:]; start and cap are the storage's own
	off  int
	pool *Pool      // where storage comes from; nil: the default Pool
	fp   *FixedPool // the FixedPool of a checkout; nil otherwise

	index int32  // the FixedPool buffer's index, or -1 for a miss
	state uint32 // stLive or stFree; atomic for a FixedPool miss
	// toSample counts down the storage returns until the one that samples
	// the length for calibration (one in sampleEvery; 0 or 1: this one).
	toSample uint8
	owned    bool // buf is bytepool storage, returned on Free
	hdr      bool // the header comes from Pool.Get and goes back there
	// sampled is the keep.Keeper's InSample of owned storage, asked once
	// when it is taken rather than at every Free and Get that keep it.
	sampled bool
	probe   [1]byte

	// lastRead is what the last call did, as bytes.Buffer's, so that
	// UnreadByte and UnreadRune know what they may undo: opInvalid after
	// anything but a read, opRead after a read of at least one byte, or the
	// size of the rune ReadRune read.
	lastRead int8
}

const (
	stLive uint32 = iota
	stFree
)

// lastRead values, bytes.Buffer's.
const (
	opRead    int8 = -1 // a read other than ReadRune
	opInvalid int8 = 0  // not a read
)

// keepMax is the largest storage an idle Buffer header keeps for its next
// Get; larger storage goes back to bytepool on Free.
const keepMax = 64 << 10

// minRead is how much room ReadFrom makes before each Read, as bytes.Buffer.
const minRead = 512

const maxInt = int(^uint(0) >> 1)

// check panics if b was freed; only in the checked build.
func (b *Buffer) check(op string) {
	if b.state == stFree {
		b.stale(op)
	}
}

// Len returns the number of unread bytes: len(b.Bytes()).
func (b *Buffer) Len() int {
	if checked.Enabled {
		b.check("Len")
	}
	return len(b.buf) - b.off
}

// Cap returns the capacity of the storage, read part included.
func (b *Buffer) Cap() int {
	if checked.Enabled {
		b.check("Cap")
	}
	return cap(b.buf)
}

// Available returns how many bytes can be written after the contents
// without growing or moving them: Cap() - Len(), less the bytes already
// read (which still lie before the unread ones). A [Strict] [FixedPool]
// buffer never refuses a write of up to Available bytes, nor one of up to
// Cap() - Len(), for which it slides the unread bytes to the front.
func (b *Buffer) Available() int {
	if checked.Enabled {
		b.check("Available")
	}
	return cap(b.buf) - len(b.buf)
}

// Bytes returns the unread bytes. The slice aliases the storage: it is
// valid until the next write, Read, Reset, Truncate, Grow, Free or Close.
func (b *Buffer) Bytes() []byte {
	if checked.Enabled {
		b.check("Bytes")
	}
	return b.buf[b.off:]
}

// AvailableBuffer returns an empty slice with b.Available() capacity, the
// storage after the contents, as bytes.Buffer.AvailableBuffer: append to it
// and pass the result to an immediately succeeding [Buffer.Write]. It is
// valid until the next write, Grow, Free or Close.
func (b *Buffer) AvailableBuffer() []byte {
	if checked.Enabled {
		b.check("AvailableBuffer")
	}
	return b.buf[len(b.buf):]
}

// String returns a copy of the unread bytes as a string, or "<nil>" for a
// nil *Buffer (as bytes.Buffer). It allocates; write b.Bytes() where a
// []byte will do.
func (b *Buffer) String() string {
	if b == nil {
		return "<nil>"
	}
	if checked.Enabled {
		b.check("String")
	}
	return string(b.buf[b.off:])
}

// Reset empties the buffer and keeps its storage for the next writes.
func (b *Buffer) Reset() {
	if checked.Enabled {
		b.check("Reset")
	}
	b.buf = b.buf[:0]
	b.off = 0
	b.lastRead = opInvalid
}

// Truncate discards all but the first n unread bytes, keeping the storage.
// It panics with "memkit/buffer: Truncate out of range" unless
// 0 <= n <= b.Len().
func (b *Buffer) Truncate(n int) {
	if checked.Enabled {
		b.check("Truncate")
	}
	if n == 0 {
		b.Reset()
		return
	}
	b.lastRead = opInvalid
	if n < 0 || n > len(b.buf)-b.off {
		panic(msgTruncate)
	}
	b.buf = b.buf[:b.off+n]
}

// Grow makes room for at least n more bytes, so that the next n bytes of
// writes neither allocate nor move the contents, as bytes.Buffer.Grow. It
// panics with "memkit/buffer: negative size" if n < 0, and with
// bytes.ErrTooLarge, the Buffer unchanged, if the storage cannot be had: n
// more bytes would overflow an int, or the system cannot serve them now
// (asked before anything is reserved, so the process never meets the
// runtime's fatal out-of-memory). For a [Strict] [FixedPool] buffer that n
// more bytes would take past the pool's size, or an [Expand] one whose
// budget refuses the growth, Grow changes nothing: the writes that do not
// fit are then refused with io.ErrShortWrite ([Buffer.Available] tells the
// room there is).
func (b *Buffer) Grow(n int) {
	if checked.Enabled {
		b.check("Grow")
	}
	if n < 0 {
		panic(msgNegative)
	}
	if n > cap(b.buf)-len(b.buf) {
		b.grow(n)
	}
}

// Write appends p. It returns len(p), nil; for a [Strict] [FixedPool]
// buffer that p would take past the pool's size, 0, io.ErrShortWrite, and
// nothing is written. It panics with bytes.ErrTooLarge, as [Buffer.Grow],
// if the storage p needs cannot be had.
func (b *Buffer) Write(p []byte) (int, error) {
	if checked.Enabled {
		b.check("Write")
	}
	buf := b.buf
	l := len(buf)
	// n as unsigned: a length that overflows it takes the slow path, which
	// refuses it; the compare also proves buf[:n] in range, with no bounds
	// check.
	n := l + len(p)
	if uint(n) > uint(cap(buf)) {
		return b.writeSlow(p)
	}
	// A reslice and a copy rather than append: only the length is stored
	// back, with no write barrier for the unchanged pointer; buf, the
	// header's slice read once, spares the bounds checks.
	b.buf = buf[:n]
	b.lastRead = opInvalid
	copy(buf[l:n], p)
	return len(p), nil
}

// writeSlow is Write when p does not fit the room there is: it grows, or
// reports the refusal of a Strict or budgeted FixedPool buffer.
func (b *Buffer) writeSlow(p []byte) (int, error) {
	if !b.grow(len(p)) {
		return 0, b.refuse()
	}
	b.lastRead = opInvalid
	l := len(b.buf)
	b.buf = b.buf[:l+len(p)]
	copy(b.buf[l:], p)
	return len(p), nil
}

// WriteString appends s, as [Buffer.Write].
func (b *Buffer) WriteString(s string) (int, error) {
	if checked.Enabled {
		b.check("WriteString")
	}
	if len(s) > cap(b.buf)-len(b.buf) && !b.grow(len(s)) {
		return 0, b.refuse()
	}
	b.lastRead = opInvalid
	l := len(b.buf)
	b.buf = b.buf[:l+len(s)]
	copy(b.buf[l:], s)
	return len(s), nil
}

// WriteByte appends c, as [Buffer.Write].
func (b *Buffer) WriteByte(c byte) error {
	if checked.Enabled {
		b.check("WriteByte")
	}
	l := len(b.buf)
	if l == cap(b.buf) {
		if !b.grow(1) {
			return b.refuse()
		}
		l = len(b.buf)
	}
	b.lastRead = opInvalid
	b.buf = b.buf[:l+1]
	b.buf[l] = c
	return nil
}

// WriteRune appends the UTF-8 encoding of r (of utf8.RuneError if r is not
// a valid code point), as bytes.Buffer.WriteRune, and returns its length;
// errors as [Buffer.Write].
func (b *Buffer) WriteRune(r rune) (int, error) {
	if uint32(r) < utf8.RuneSelf {
		if err := b.WriteByte(byte(r)); err != nil {
			return 0, err
		}
		return 1, nil
	}
	if checked.Enabled {
		b.check("WriteRune")
	}
	n := utf8.RuneLen(r)
	if n < 0 {
		n = utf8.RuneLen(utf8.RuneError)
	}
	if n > cap(b.buf)-len(b.buf) && !b.grow(n) {
		return 0, b.refuse()
	}
	b.lastRead = opInvalid
	b.buf = utf8.AppendRune(b.buf, r)
	return n, nil
}

// ReadFrom appends what r yields until io.EOF, which it does not return,
// or another error, which it does. It never reads a byte it cannot keep: what
// the buffer did not take is still in r.
//
// A [FixedPool] buffer fills its storage first. When it is full it must
// learn whether r has more before it expands: from an io.ByteScanner
// (bufio.Reader, bytes.Reader, strings.Reader, ...) it reads one byte and,
// if the buffer cannot take it, unreads it, so a body of exactly the pool's
// size never expands and never fails. From another reader, an [Expand]
// buffer without a budget reads one byte and expands if it comes; a
// [Strict] buffer, or an Expand one with a budget, cannot give a byte back,
// so it does not read past a full buffer: Strict returns io.ErrShortWrite
// (even if r happened to be at its end), Expand with a budget expands
// first, or returns io.ErrShortWrite if the budget refuses. Other buffers
// make room for 512 bytes before each Read, as bytes.Buffer.
func (b *Buffer) ReadFrom(r io.Reader) (int64, error) {
	if checked.Enabled {
		b.check("ReadFrom")
	}
	b.lastRead = opInvalid
	var total int64
	for {
		if len(b.buf) == cap(b.buf) {
			if b.fp != nil {
				m, err := b.readPastFull(r)
				total += int64(m)
				if err == io.EOF {
					return total, nil
				}
				if err != nil {
					return total, err
				}
				continue
			}
			b.grow(minRead)
		} else if b.fp == nil && cap(b.buf)-len(b.buf) < minRead {
			b.grow(minRead)
		}
		l := len(b.buf)
		m, err := r.Read(b.buf[l:cap(b.buf)])
		if m < 0 {
			panic(errNegativeRead)
		}
		if m > cap(b.buf)-l {
			panic(errBadRead)
		}
		b.buf = b.buf[:l+m]
		total += int64(m)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// readPastFull makes room in a full FixedPool buffer for ReadFrom, reading
// at most one byte of r, and only one the buffer keeps. It returns the bytes
// appended (0 or 1) and r's error (io.EOF: r ended with the buffer full), or
// io.ErrShortWrite if the buffer may not grow.
func (b *Buffer) readPastFull(r io.Reader) (int, error) {
	if b.off > 0 || b.owned {
		// A slide of the unread bytes, or the growth of storage already
		// expanded: no probe needed, and nothing read if it is refused.
		n := 1
		if b.off == 0 {
			n = minRead
		}
		if !b.grow(n) {
			return 0, b.refuse()
		}
		return 0, nil
	}
	if sc, ok := r.(io.ByteScanner); ok {
		c, err := sc.ReadByte()
		if err != nil {
			return 0, err
		}
		if !b.grow(1) {
			err := b.refuse()
			if uerr := sc.UnreadByte(); uerr != nil {
				return 0, uerr // r broke io.ByteScanner's contract
			}
			return 0, err
		}
		b.buf = append(b.buf, c)
		return 1, nil
	}
	if b.fp.strict {
		return 0, b.refuse()
	}
	if b.fp.budget != nil {
		// The byte could not be given back if the budget refused the
		// expansion: expand first.
		if !b.grow(1) {
			return 0, b.refuse()
		}
		return 0, nil
	}
	m, err := r.Read(b.probe[:])
	if m < 0 {
		panic(errNegativeRead)
	}
	if m > 1 {
		panic(errBadRead)
	}
	if m == 1 {
		b.grow(1) // an Expand buffer without a budget always grows
		b.buf = append(b.buf, b.probe[0])
	}
	return m, err
}

// refuse counts a write a Strict buffer refused and returns its error.
func (b *Buffer) refuse() error {
	b.fp.countRefusal()
	return io.ErrShortWrite
}

// grow makes room for n more bytes after len(b.buf), n > 0. It reports
// false, changing nothing, when a Strict FixedPool buffer would pass its
// size, or an Expand one its pool's budget. It panics with
// bytes.ErrTooLarge, changing nothing, when the storage cannot be had.
func (b *Buffer) grow(n int) bool {
	l := len(b.buf) - b.off
	c := cap(b.buf)
	if n > maxInt-l {
		if b.fp != nil && b.fp.strict {
			return false // it never reserves
		}
		panic(bytes.ErrTooLarge)
	}
	need := l + n
	fixed := b.fp != nil && !b.owned
	// Slide the unread bytes to the front when that makes room: always
	// before a FixedPool buffer expands, else when they take at most half
	// the storage, as bytes.Buffer does, so that sliding stays amortized.
	if b.off > 0 && (need <= c/2 || fixed && need <= c) {
		copy(b.buf, b.buf[b.off:])
		b.buf = b.buf[:l]
		b.off = 0
		b.lastRead = opInvalid // the bytes read are gone
		return true
	}
	if b.fp != nil && b.fp.strict {
		return false
	}
	p := b.pool
	if p == nil {
		p = Default()
	}
	size := need
	if c == 0 {
		size = max(need, p.defaultSize())
	} else if c <= maxInt/2 {
		size = max(need, 2*c)
	}
	// Ask the system before taking storage: make would end the process
	// over a size it cannot serve. Doubling that the system refuses falls
	// back to the size needed.
	if !sysmem.Available(uint64(size)) {
		if size == need || !sysmem.Available(uint64(need)) {
			panic(bytes.ErrTooLarge)
		}
		size = need
	}
	if checked.Enabled {
		// Ask for the whole class: a Buffer writes up to the capacity, and
		// bytepool's checked build guards the slack past the length asked.
		size = p.bp.ClassSize(size)
	}
	if b.fp != nil && b.fp.budget != nil && !b.fp.chargeGrowth(b, p.bp.ClassSize(size)) {
		return false
	}
	nb := p.bp.Get(size)[:l]
	copy(nb, b.buf[b.off:])
	if b.owned {
		p.bp.Put(b.buf)
	} else if b.fp != nil {
		b.fp.countExpansion()
	}
	b.buf, b.off, b.owned, b.sampled = nb, 0, true, p.keeper.InSample(nb)
	b.lastRead = opInvalid
	return true
}
