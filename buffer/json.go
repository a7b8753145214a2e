package buffer

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"time"

	"github.com/memkit/memkit/internal/checked"
)

// MaxJSONDepth is the deepest nesting of arrays and objects a [JSON] writer
// accepts; one level more records an error.
const MaxJSONDepth = 256

// JSON writes one JSON value into a [Buffer], token by token, without
// allocating: the writer Viki's bytepool had, made correct.
//
//	j := buffer.NewJSON(b)
//	j.BeginObject()
//	j.Key("ids")
//	j.BeginArray()
//	j.Int(1)
//	j.Int(2)
//	j.EndArray()
//	j.EndObject()
//	err := j.Err() // nil: b holds {"ids":[1,2]}
//
// Commas and colons are placed automatically. Strings and keys are escaped
// exactly as encoding/json escapes them: `"` and `\`, every control
// character (\b, \f, \n, \r, \t, else \u00XX), invalid UTF-8 as \ufffd,
// U+2028 and U+2029, and, unless [JSON.SetEscapeHTML] turns it off, `<`,
// `>` and `&`. Numbers are formatted as encoding/json formats them, times
// as RFC 3339 with nanoseconds, as time.Time's MarshalJSON does. The output
// is byte for byte what json.Marshal writes for the same values.
//
// A call that would make the output invalid — an End that does not match,
// a Key outside an object or after a Key, a value where a key is due, a
// second top-level value, a NaN or infinite float, a Raw value that is not
// JSON, nesting deeper than [MaxJSONDepth], or a write a [Strict] buffer
// refuses — records an error: it writes nothing, and every later call does
// nothing. [JSON.Err] returns it, or reports a document left unfinished. The
// buffer then holds what came before and is not valid JSON.
//
// A JSON is a small value (64 bytes): create it with [NewJSON] and call its
// methods on an addressable variable; it stays on the stack. It is not safe
// for concurrent use, and neither is its Buffer. The zero value is not
// usable. It may be copied, but the copies then write into one Buffer
// without knowing of each other. Nothing may write to the Buffer between
// the JSON's calls.
//
// Each call costs the formatting of its value and a copy; the nesting is
// kept in a 256-bit stack inside the value.
type JSON struct {
	b     *Buffer
	err   error
	st    uint8
	plain bool // do not escape <, > and &
	depth uint16
	objs  [MaxJSONDepth / 64]uint64 // bit d set: level d+1 is an object
}

// Writer states: what the next token may be.
const (
	stTop      uint8 = iota // nothing written: a value
	stDone                  // one complete value: nothing more
	stArrFirst              // just after '[': a value or ']'
	stArrNext               // after a value in an array: ',' value or ']'
	stObjFirst              // just after '{': a key or '}'
	stObjNext               // after a value in an object: ',' key or '}'
	stObjValue              // after a key: a value
	stErr                   // an error was recorded
)

// NewJSON returns a writer that appends one JSON value to b, escaping HTML
// characters.
func NewJSON(b *Buffer) JSON { return JSON{b: b} }

// SetEscapeHTML sets whether `<`, `>` and `&` in strings and keys are
// escaped as \u003c, \u003e and \u0026 (default true), as
// json.Encoder.SetEscapeHTML does. U+2028 and U+2029 are escaped either
// way, as encoding/json does, since they end a line in JavaScript; in a
// [JSON.Raw] value, as encoding/json does, only while escaping is on.
func (j *JSON) SetEscapeHTML(on bool) { j.plain = !on }

// Err returns the first error recorded, or, if none, an error matching
// [ErrJSON] if the document is unfinished (nothing written, or an array or
// object left open), or nil: then the buffer holds exactly one valid JSON
// value after what it held before [NewJSON].
func (j *JSON) Err() error {
	switch {
	case j.err != nil:
		return j.err
	case j.st == stTop:
		return errEmpty
	case j.depth > 0:
		return errUnclosed
	}
	return nil
}

// fail records err unless an error is already recorded.
func (j *JSON) fail(err error) {
	if j.st != stErr {
		j.err = err
		j.st = stErr
	}
}

// value starts a value of n bytes: it checks the state, makes room for the
// value and its comma, writes the comma, and moves to the state after the
// value. It reports false if the value must not be written.
func (j *JSON) value(n int) bool {
	b := j.b
	if checked.Enabled {
		b.check("JSON")
	}
	if l := len(b.buf); j.st == stArrNext && cap(b.buf)-l > n {
		b.buf = b.buf[:l+1]
		b.buf[l] = ','
		b.lastRead = opInvalid // a write, for UnreadByte
		return true
	}
	return j.valueSlow(n)
}

// valueSlow is value for every state but "next element of an array", and
// for a buffer without room; kept out of line so that the fast path stays
// small.
//
//go:noinline
func (j *JSON) valueSlow(n int) bool {
	comma, next := 0, j.st
	switch j.st {
	case stTop:
		next = stDone
	case stArrFirst:
		next = stArrNext
	case stArrNext:
		comma = 1
	case stObjValue:
		next = stObjNext
	case stObjFirst, stObjNext:
		j.fail(errNeedKey)
		return false
	case stDone:
		j.fail(errSecondValue)
		return false
	default:
		return false
	}
	if !j.room(n + comma) {
		return false
	}
	if comma == 1 {
		j.b.buf = append(j.b.buf, ',')
	}
	j.st = next
	return true
}

// room makes room for n bytes, about to be written, or records the
// refusal of a Strict buffer.
func (j *JSON) room(n int) bool {
	b := j.b
	if cap(b.buf)-len(b.buf) < n && !b.grow(n) {
		j.fail(b.refuse())
		return false
	}
	b.lastRead = opInvalid // a write, for UnreadByte
	return true
}

// Int writes an integer.
func (j *JSON) Int(v int64) {
	u, neg := uint64(v), 0
	if v < 0 {
		u, neg = -u, 1
	}
	j.putUint(u, neg)
}

// Uint writes an unsigned integer.
func (j *JSON) Uint(v uint64) { j.putUint(v, 0) }

// putUint writes u in decimal after neg minus signs (0 or 1). The common
// case, a number in an array with room for it, is written out here rather
// than through value, to save a call per number.
func (j *JSON) putUint(u uint64, neg int) {
	n := decLen(u) + neg
	b := j.b
	if checked.Enabled {
		b.check("JSON")
	}
	l := len(b.buf)
	if j.st == stArrNext && cap(b.buf)-l > n {
		b.buf = b.buf[:l+1]
		b.buf[l] = ','
		b.lastRead = opInvalid
		l++
	} else {
		if !j.valueSlow(n) {
			return
		}
		l = len(b.buf)
	}
	b.buf = b.buf[:l+n] // a length store only: no write barrier
	d := b.buf[l : l+n]
	if neg == 1 {
		d[0] = '-'
	}
	if u >= 1<<32 {
		putDec(d[neg:], u)
		return
	}
	// putDec's 32-bit loop, written out: most numbers take this path.
	i, w := n, uint32(u)
	for w >= 100 {
		q := w / 100
		i -= 2
		binary.LittleEndian.PutUint16(d[i:], pairs[w-q*100])
		w = q
	}
	if w >= 10 {
		binary.LittleEndian.PutUint16(d[i-2:], pairs[w])
		return
	}
	d[i-1] = byte('0' + w)
}

// Float writes f as encoding/json writes a float64: the shortest decimal
// that reads back as f, with an exponent only below 1e-6 or from 1e21 up.
// NaN and ±Inf record [ErrNonFinite].
func (j *JSON) Float(f float64) { j.float(f, 64) }

// Float32 writes f as encoding/json writes a float32: the shortest decimal
// that reads back as f when parsed as a float32 (0.1, where [JSON.Float]
// of float64(f) writes 0.10000000149011612), with an exponent only below
// 1e-6 or from 1e21 up. NaN and ±Inf record [ErrNonFinite].
func (j *JSON) Float32(f float32) { j.float(float64(f), 32) }

// float writes f, a float of bitSize 32 or 64.
func (j *JSON) float(f float64, bitSize int) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		j.fail(ErrNonFinite)
		return
	}
	var tmp [32]byte
	out := appendJSONFloat(tmp[:0], f, bitSize)
	if !j.value(len(out)) {
		return
	}
	j.b.buf = append(j.b.buf, out...)
}

// Bool writes true or false.
func (j *JSON) Bool(v bool) {
	if v {
		if j.value(4) {
			j.b.buf = append(j.b.buf, "true"...)
		}
		return
	}
	if j.value(5) {
		j.b.buf = append(j.b.buf, "false"...)
	}
}

// Null writes null.
func (j *JSON) Null() {
	if j.value(4) {
		j.b.buf = append(j.b.buf, "null"...)
	}
}

// String writes s as a JSON string, escaped as encoding/json escapes it.
func (j *JSON) String(s string) {
	n, plain := j.quotedLen(s)
	if j.value(n) {
		j.b.buf = j.appendQuoted(j.b.buf, s, plain)
	}
}

// Time writes t as a string in RFC 3339 format with nanoseconds (trailing
// zeros dropped), as time.Time's MarshalJSON does. A time whose year is
// outside 0-9999, or whose zone is a day or more from UTC, cannot be
// written so and records an error matching [ErrJSON], as MarshalJSON
// fails.
func (j *JSON) Time(t time.Time) {
	var tmp [48]byte
	out := t.AppendFormat(tmp[:0], time.RFC3339Nano)
	if !strictRFC3339(out) {
		j.fail(errTimeRange)
		return
	}
	if j.value(len(out) + 2) {
		buf := append(j.b.buf, '"')
		buf = append(buf, out...)
		j.b.buf = append(buf, '"')
	}
}

// Raw writes raw, which must be one complete JSON value, as json.Marshal
// writes a json.RawMessage: compacted (whitespace outside strings
// dropped), and, unless [JSON.SetEscapeHTML] turned it off, with `<`, `>`,
// `&`, U+2028 and U+2029 escaped as \u003c, \u003e, \u0026, \u2028 and
// \u2029 (with it off, none of them: unlike in a string, encoding/json
// leaves U+2028 and U+2029 in a RawMessage as they are then). A
// nil raw writes null, as a nil json.RawMessage. Anything that is not one
// JSON value records an error matching [ErrJSON] that wraps encoding/json's
// *json.SyntaxError ("memkit/buffer: JSON: Raw value is not valid JSON:
// invalid character 'x' looking for beginning of value"). It costs json.Valid's
// scan of raw and two light passes; only an invalid raw allocates (the
// error).
func (j *JSON) Raw(raw []byte) {
	if raw == nil {
		raw = jsonNull
	}
	if !json.Valid(raw) {
		j.fail(rawError(raw))
		return
	}
	html := !j.plain
	_, n, verbatim := compact(nil, raw, html, false)
	if !j.value(n) {
		return
	}
	if verbatim {
		j.b.buf = append(j.b.buf, raw...)
		return
	}
	j.b.buf, _, _ = compact(j.b.buf, raw, html, true)
}

// BeginArray opens an array.
func (j *JSON) BeginArray() { j.begin('[', stArrFirst) }

// BeginObject opens an object.
func (j *JSON) BeginObject() { j.begin('{', stObjFirst) }

func (j *JSON) begin(c byte, st uint8) {
	if j.depth == MaxJSONDepth {
		j.fail(errDepth)
		return
	}
	if !j.value(1) {
		return
	}
	j.b.buf = append(j.b.buf, c)
	d := j.depth
	if st == stObjFirst {
		j.objs[d>>6] |= 1 << (d & 63)
	} else {
		j.objs[d>>6] &^= 1 << (d & 63)
	}
	j.depth++
	j.st = st
}

// EndArray closes the innermost array; if the innermost open value is
// not an array, it records an error matching [ErrJSON].
func (j *JSON) EndArray() {
	switch j.st {
	case stArrFirst, stArrNext:
	case stErr:
		return
	default:
		j.fail(errEndArray)
		return
	}
	j.end(']')
}

// EndObject closes the innermost object; if the innermost open value is
// not an object, or a Key waits for its value, it records an error
// matching [ErrJSON].
func (j *JSON) EndObject() {
	switch j.st {
	case stObjFirst, stObjNext:
	case stObjValue:
		j.fail(errEndAfterKey)
		return
	case stErr:
		return
	default:
		j.fail(errEndObject)
		return
	}
	j.end('}')
}

func (j *JSON) end(c byte) {
	if checked.Enabled {
		j.b.check("JSON")
	}
	if !j.room(1) {
		return
	}
	j.b.buf = append(j.b.buf, c)
	j.depth--
	d := j.depth
	switch {
	case d == 0:
		j.st = stDone
	case j.objs[(d-1)>>6]&(1<<((d-1)&63)) != 0:
		j.st = stObjNext
	default:
		j.st = stArrNext
	}
}

// Key writes an object key, escaped as [JSON.String] escapes, and its
// colon. Outside an object, or right after another Key, it records an error
// matching [ErrJSON].
func (j *JSON) Key(k string) {
	comma := 0
	switch j.st {
	case stObjFirst:
	case stObjNext:
		comma = 1
	case stObjValue:
		j.fail(errKeyAfterKey)
		return
	case stErr:
		return
	default:
		j.fail(errKeyOutside)
		return
	}
	if checked.Enabled {
		j.b.check("JSON")
	}
	n, plain := j.quotedLen(k)
	if !j.room(comma + n + 1) {
		return
	}
	buf := j.b.buf
	if comma == 1 {
		buf = append(buf, ',')
	}
	buf = j.appendQuoted(buf, k, plain)
	j.b.buf = append(buf, ':')
	j.st = stObjValue
}
