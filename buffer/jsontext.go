package buffer

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// The text of JSON values as encoding/json writes it, for the JSON writer:
// strings escaped, raw values compacted, floats formatted, times checked.

// appendJSONFloat formats finite f, of bitSize 32 or 64, by encoding/json's
// rule (ES6 number to string): 'f' format, or 'e' for magnitudes below 1e-6
// or from 1e21 up (compared as float32 for a float32, as encoding/json
// does), with a one-digit negative exponent unpadded (e-7, not e-07).
func appendJSONFloat(dst []byte, f float64, bitSize int) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 {
		if bitSize == 64 && (a < 1e-6 || a >= 1e21) || bitSize == 32 && (float32(a) < 1e-6 || float32(a) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bitSize)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}

// strictRFC3339 reports whether a time formatted by RFC3339Nano is valid
// RFC 3339: a four-digit year and a zone under 24 hours.
func strictRFC3339(b []byte) bool {
	if len(b) < len("2006-01-02T15:04:05Z") || b[4] != '-' {
		return false
	}
	if b[len(b)-1] == 'Z' {
		return true
	}
	z := b[len(b)-6:] // +hh:mm
	if z[0] >= '0' && z[0] <= '9' {
		return false // more than two hour digits
	}
	return (z[1]-'0')*10+(z[2]-'0') < 24
}

// jsonNull is what Raw writes for a nil raw, as for a nil json.RawMessage.
var jsonNull = []byte("null")

// isSpace reports whether c is JSON's insignificant whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isLineSep reports whether raw[i:] starts with U+2028 or U+2029 (E2 80 A8
// or E2 80 A9).
func isLineSep(raw []byte, i int) bool {
	return raw[i] == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8
}

// compact is encoding/json's compaction of valid JSON raw, as it writes a
// json.RawMessage (see [JSON.Raw]): whitespace outside strings dropped
// and, with html, `<`, `>`, `&`, U+2028 and U+2029 in strings escaped as
// \uXXXX. With write it appends the result to dst; without, it only
// measures it. It returns the result's length and whether the result is
// raw unchanged. Inside a string the byte after a backslash is ASCII and
// never escaped, so it is skipped.
func compact(dst, raw []byte, html, write bool) ([]byte, int, bool) {
	n, start, str, changed := len(raw), 0, false, false
	for i := 0; i < len(raw); i++ {
		c, size := raw[i], 1 // raw[i:i+size] changes
		switch {
		case !str:
			if str = c == '"'; !isSpace(c) {
				continue
			}
		case c == '\\':
			i++
			continue
		case c == '"':
			str = false
			continue
		case !html:
			continue
		case c == '<' || c == '>' || c == '&':
		case isLineSep(raw, i):
			size = 3
		default:
			continue
		}
		// raw[i:i+size] is whitespace to drop, or, in a string, a
		// character to escape.
		esc := 0
		if str {
			esc = len(`\u2028`)
		}
		n += esc - size
		changed = true
		if write {
			dst = append(dst, raw[start:i]...)
			if esc > 0 {
				r := rune(c)
				if size == 3 {
					r = 0x2020 | rune(raw[i+2]&15) // E2 80 A8 is U+2028, A9 U+2029
				}
				dst = append(dst, '\\', 'u', hexDigits[r>>12], hexDigits[r>>8&15], hexDigits[r>>4&15], hexDigits[r&15])
			}
			start = i + size
		}
		i += size - 1
	}
	if write {
		dst = append(dst, raw[start:]...)
	}
	return dst, n, !changed
}

// rawError is the error Raw records for raw, invalid JSON: encoding/json's
// *json.SyntaxError, as json.Marshal reports it for a json.RawMessage,
// wrapped. It allocates; only a failing Raw calls it.
func rawError(raw []byte) error {
	var discard bytes.Buffer
	err := json.Compact(&discard, raw)
	if err == nil {
		err = errors.New("json.Valid and json.Compact disagree") // cannot happen
	}
	return &rawJSONError{err}
}

// rawJSONError is a Raw value's error: it matches [ErrJSON] and unwraps to
// encoding/json's error.
type rawJSONError struct{ err error }

func (e *rawJSONError) Error() string {
	return "memkit/buffer: JSON: Raw value is not valid JSON: " + e.err.Error()
}
func (e *rawJSONError) Is(t error) bool { return t == ErrJSON }
func (e *rawJSONError) Unwrap() error   { return e.err }

// safeSet[c] is true for the ASCII bytes a JSON string holds unescaped;
// htmlSafeSet also excludes <, > and &. Bytes from 0x80 are false: they are
// checked as UTF-8.
var safeSet, htmlSafeSet = func() (s, h [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		s[c] = c != '"' && c != '\\'
		h[c] = s[c] && c != '<' && c != '>' && c != '&'
	}
	return
}()

// quotedLen returns the length of s quoted and escaped, and whether s needs
// no escape at all.
func (j *JSON) quotedLen(s string) (int, bool) {
	set := &htmlSafeSet
	if j.plain {
		set = &safeSet
	}
	i := 0
	for i < len(s) && set[s[i]] {
		i++
	}
	if i == len(s) {
		return len(s) + 2, true
	}
	n := i + 2
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case set[c]:
				n++
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n, false
}

const hexDigits = "0123456789abcdef"

// appendQuoted appends s quoted and escaped; dst has room for it (see
// quotedLen), and plain says s needs no escape.
func (j *JSON) appendQuoted(dst []byte, s string, plain bool) []byte {
	dst = append(dst, '"')
	if plain {
		dst = append(dst, s...)
		return append(dst, '"')
	}
	set := &htmlSafeSet
	if j.plain {
		set = &safeSet
	}
	start := 0 // s[start:i] is pending, unescaped
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if set[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&15])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
