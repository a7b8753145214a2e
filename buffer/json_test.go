package buffer_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/internal/race"
)

// marshal is what encoding/json writes for v, with or without HTML escaping.
func marshal(t testing.TB, v any, html bool) string {
	t.Helper()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("json: %v", err)
	}
	return strings.TrimSuffix(out.String(), "\n")
}

// write returns what the JSON writer writes for f.
func write(t testing.TB, html bool, f func(j *buffer.JSON)) (string, error) {
	t.Helper()
	b := buffer.Get()
	defer b.Free()
	j := buffer.NewJSON(b)
	j.SetEscapeHTML(html)
	f(&j)
	return b.String(), j.Err()
}

// jsonStrings are strings whose escaping differs in some way.
func jsonStrings() []string {
	ss := []string{
		"", "plain", `"quoted"`, `back\slash`, "<script>&amp;</script>",
		"\u2028\u2029", "line\nfeed\ttab\rcr\bbs\fff", "\x00\x01\x1f\x7f",
		"é☺𝄞", "\xff", "a\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\uFFFD", "mixed \x00<é>\xff\u2028",
		strings.Repeat("long ", 100) + "\x01",
	}
	for c := range 256 {
		ss = append(ss, string([]byte{byte(c)}), "x"+string([]byte{byte(c)})+"y")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = byte(r.IntN(256))
			if r.IntN(2) == 0 {
				const pick = "ab\"\\<>&\n\xe2\x80\xa8\xc3\xa9"
				b[i] = pick[r.IntN(len(pick))]
			}
		}
		ss = append(ss, string(b))
	}
	return ss
}

func TestJSON_StringEscapingMatchesEncodingJSON(t *testing.T) {
	for _, html := range []bool{true, false} {
		for _, s := range jsonStrings() {
			got, err := write(t, html, func(j *buffer.JSON) { j.String(s) })
			if want := marshal(t, s, html); err != nil || got != want {
				t.Fatalf("html=%v String(%q) = %s, %v; want %s", html, s, got, err, want)
			}
			got, err = write(t, html, func(j *buffer.JSON) {
				j.BeginObject()
				j.Key(s)
				j.Int(1)
				j.EndObject()
			})
			if want := marshal(t, map[string]int{s: 1}, html); err != nil || got != want {
				t.Fatalf("html=%v Key(%q) = %s, %v; want %s", html, s, got, err, want)
			}
		}
	}
}

func TestJSON_NumbersMatchEncodingJSON(t *testing.T) {
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 1e-7, 9.99999e-7, 1e20, 1e21, 1e-9,
		123456789.123, math.MaxFloat64, math.SmallestNonzeroFloat64, -math.MaxFloat64, 5e-324, 1.5e-10, 3.4e38}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		f := math.Float64frombits(r.Uint64())
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			floats = append(floats, f)
		}
	}
	for _, f := range floats {
		got, err := write(t, true, func(j *buffer.JSON) { j.Float(f) })
		if want := marshal(t, f, true); err != nil || got != want {
			t.Fatalf("Float(%v) = %s, %v; want %s", f, got, err, want)
		}
	}
	ints := []int64{0, 1, -1, 9, 10, -10, 99, 100, math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32}
	for range 2000 {
		ints = append(ints, int64(r.Uint64())>>r.IntN(64))
	}
	for _, v := range ints {
		got, _ := write(t, true, func(j *buffer.JSON) { j.Int(v) })
		if want := marshal(t, v, true); got != want {
			t.Fatalf("Int(%d) = %s; want %s", v, got, want)
		}
		got, _ = write(t, true, func(j *buffer.JSON) { j.Uint(uint64(v)) })
		if want := marshal(t, uint64(v), true); got != want {
			t.Fatalf("Uint(%d) = %s; want %s", uint64(v), got, want)
		}
	}
}

func TestJSON_TimeMatchesMarshalJSON(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		time.Date(2024, 1, 2, 3, 4, 5, 120000000, time.FixedZone("x", -7*3600-30*60)),
		time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("y", 23*3600+59*60)),
		time.Unix(1700000000, 5).In(time.FixedZone("lmt", 17*60+30)),
	} {
		got, err := write(t, true, func(j *buffer.JSON) { j.Time(tm) })
		if want := marshal(t, tm, true); err != nil || got != want {
			t.Fatalf("Time(%v) = %s, %v; want %s", tm, got, err, want)
		}
	}
	for _, tm := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.FixedZone("z", 24*3600)),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.FixedZone("z", -100*3600)),
	} {
		if _, err := json.Marshal(tm); err == nil {
			t.Fatalf("json.Marshal(%v) succeeded", tm)
		}
		got, err := write(t, true, func(j *buffer.JSON) { j.Time(tm) })
		if !errors.Is(err, buffer.ErrJSON) || got != "" {
			t.Fatalf("Time(%v) = %q, %v; want an ErrJSON and nothing written", tm, got, err)
		}
	}
}

func TestJSON_DocumentMatchesMarshal(t *testing.T) {
	got, err := write(t, true, func(j *buffer.JSON) {
		j.BeginObject()
		j.Key("name")
		j.String("memkit <buffer>")
		j.Key("ids")
		j.BeginArray()
		j.Int(1)
		j.Int(-2)
		j.Uint(3)
		j.EndArray()
		j.Key("empty")
		j.BeginObject()
		j.EndObject()
		j.Key("none")
		j.BeginArray()
		j.EndArray()
		j.Key("ok")
		j.Bool(true)
		j.Key("no")
		j.Bool(false)
		j.Key("nil")
		j.Null()
		j.Key("pi")
		j.Float(3.14159)
		j.Key("raw")
		j.Raw([]byte(` {"a": [1, 2]} `))
		j.EndObject()
	})
	want := `{"name":"memkit \u003cbuffer\u003e","ids":[1,-2,3],"empty":{},"none":[],"ok":true,"no":false,"nil":null,"pi":3.14159,"raw":{"a":[1,2]}}`
	if err != nil || got != want {
		t.Fatalf("got %s, %v\nwant %s", got, err, want)
	}
	if !json.Valid([]byte(got)) {
		t.Fatal("not valid JSON")
	}
}

func TestJSON_MisuseRecordsExactErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(j *buffer.JSON)
		want string // the error text
		out  string // what was written before it
	}{
		{"EndArray at top", func(j *buffer.JSON) { j.EndArray() }, "memkit/buffer: JSON: EndArray without an open array", ""},
		{"EndObject in array", func(j *buffer.JSON) { j.BeginArray(); j.EndObject() }, "memkit/buffer: JSON: EndObject without an open object", "["},
		{"EndArray in object", func(j *buffer.JSON) { j.BeginObject(); j.EndArray() }, "memkit/buffer: JSON: EndArray without an open array", "{"},
		{"EndObject after Key", func(j *buffer.JSON) { j.BeginObject(); j.Key("k"); j.EndObject() }, "memkit/buffer: JSON: EndObject after a Key with no value", `{"k":`},
		{"Key at top", func(j *buffer.JSON) { j.Key("k") }, "memkit/buffer: JSON: Key outside an object", ""},
		{"Key in array", func(j *buffer.JSON) { j.BeginArray(); j.Key("k") }, "memkit/buffer: JSON: Key outside an object", "["},
		{"Key after Key", func(j *buffer.JSON) { j.BeginObject(); j.Key("a"); j.Key("b") }, "memkit/buffer: JSON: Key after a Key with no value", `{"a":`},
		{"value without Key", func(j *buffer.JSON) { j.BeginObject(); j.Int(1) }, "memkit/buffer: JSON: value in an object without a Key", "{"},
		{"second value", func(j *buffer.JSON) { j.Int(1); j.Int(2) }, "memkit/buffer: JSON: second top-level value", "1"},
		{"NaN", func(j *buffer.JSON) { j.BeginArray(); j.Float(math.NaN()) }, "memkit/buffer: JSON cannot represent NaN or infinity", "["},
		{"Inf", func(j *buffer.JSON) { j.Float(math.Inf(-1)) }, "memkit/buffer: JSON cannot represent NaN or infinity", ""},
		{"bad Raw", func(j *buffer.JSON) { j.Raw([]byte("{")) }, "memkit/buffer: JSON: Raw value is not valid JSON: unexpected end of JSON input", ""},
		{"two Raw values", func(j *buffer.JSON) { j.Raw([]byte("1 2")) }, "memkit/buffer: JSON: Raw value is not valid JSON: invalid character '2' after top-level value", ""},
		{"nothing", func(j *buffer.JSON) {}, "memkit/buffer: JSON: no value written", ""},
		{"unclosed", func(j *buffer.JSON) { j.BeginArray(); j.BeginObject() }, "memkit/buffer: JSON: unclosed array or object", "[{"},
		{"first error sticks", func(j *buffer.JSON) { j.EndArray(); j.Float(math.NaN()); j.Int(1) }, "memkit/buffer: JSON: EndArray without an open array", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := write(t, true, tc.f)
			if err == nil || err.Error() != tc.want || got != tc.out {
				t.Fatalf("got %q, %v; want %q, %q", got, err, tc.out, tc.want)
			}
			if tc.want == buffer.ErrNonFinite.Error() {
				if err != buffer.ErrNonFinite {
					t.Fatalf("%v is not ErrNonFinite", err)
				}
			} else if !errors.Is(err, buffer.ErrJSON) {
				t.Fatalf("%v does not match ErrJSON", err)
			}
		})
	}
}

func TestJSON_DepthLimit(t *testing.T) {
	got, err := write(t, true, func(j *buffer.JSON) {
		for i := range buffer.MaxJSONDepth {
			if i%2 == 0 {
				j.BeginArray()
			} else {
				j.BeginObject()
				j.Key("k")
			}
		}
		j.Null()
		for i := buffer.MaxJSONDepth - 1; i >= 0; i-- {
			if i%2 == 0 {
				j.EndArray()
			} else {
				j.EndObject()
			}
		}
	})
	var v any
	if err != nil || json.Unmarshal([]byte(got), &v) != nil {
		t.Fatalf("nesting %d deep: %v", buffer.MaxJSONDepth, err)
	}
	_, err = write(t, true, func(j *buffer.JSON) {
		for range buffer.MaxJSONDepth + 1 {
			j.BeginArray()
		}
	})
	if err == nil || err.Error() != "memkit/buffer: JSON: nesting deeper than MaxJSONDepth" {
		t.Fatalf("one level deeper: %v", err)
	}
}

func TestJSON_WritesNoAllocations(t *testing.T) {
	if race.Enabled || buffer.Debug {
		t.Skip("the race detector allocates; memkitdebug never reuses a header")
	}
	p := mustPool(t, buffer.WithDefaultSize(4096))
	tm := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	raw := []byte(`{"a":1}`)
	spaced := []byte(` { "html": "<&>\u2028" , "n" : [ 1 , 2 ] } `) // compacted and escaped
	n := testing.AllocsPerRun(100, func() {
		b := p.Get()
		j := buffer.NewJSON(b)
		j.BeginObject()
		j.Key("s")
		j.String("<é\n\xff>")
		j.Key("a")
		j.BeginArray()
		j.Int(-123)
		j.Uint(456)
		j.Float(1.5e-9)
		j.Float32(0.1)
		j.Bool(true)
		j.Null()
		j.Time(tm)
		j.Raw(raw)
		j.Raw(spaced)
		j.EndArray()
		j.EndObject()
		if j.Err() != nil {
			panic(j.Err())
		}
		b.Free()
	})
	if n != 0 {
		t.Fatalf("%v allocs, want 0", n)
	}
}

func TestJSON_NonASCIIStringsStayValid(t *testing.T) {
	b := buffer.Get()
	defer b.Free()
	j := buffer.NewJSON(b)
	j.BeginArray()
	for i := range 1000 {
		j.String(strings.Repeat("é", i%7))
	}
	j.EndArray()
	if j.Err() != nil || !json.Valid(b.Bytes()) || !utf8.Valid(b.Bytes()) {
		t.Fatalf("err %v", j.Err())
	}
}

// marshalRaw is what encoding/json writes for json.RawMessage(raw):
// json.Marshal with HTML escaping, an Encoder with SetEscapeHTML(false)
// without.
func marshalRaw(raw []byte, html bool) (string, error) {
	if html {
		out, err := json.Marshal(json.RawMessage(raw))
		return string(out), err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	err := enc.Encode(json.RawMessage(raw))
	return strings.TrimSuffix(out.String(), "\n"), err
}

// checkRaw fails t unless Raw(raw) writes what encoding/json writes for
// json.RawMessage(raw) in the mode html, or, for raw encoding/json
// refuses, records an error matching ErrJSON that wraps encoding/json's
// own *json.SyntaxError, with its text and offset, and writes nothing.
func checkRaw(t *testing.T, raw []byte, html bool) {
	t.Helper()
	want, werr := marshalRaw(raw, html)
	got, err := write(t, html, func(j *buffer.JSON) { j.Raw(raw) })
	if werr == nil {
		if err != nil || got != want {
			t.Fatalf("Raw(%q) html=%v: %q, %v\nencoding/json: %q", raw, html, got, err, want)
		}
		return
	}
	var wsyn, gsyn *json.SyntaxError
	if !errors.As(werr, &wsyn) {
		t.Fatalf("encoding/json's error for %q is %T: %v", raw, werr, werr)
	}
	switch {
	case got != "" || err == nil || !errors.Is(err, buffer.ErrJSON):
		t.Fatalf("Raw(%q) html=%v: %q, %v; want nothing written and an ErrJSON", raw, html, got, err)
	case !errors.As(err, &gsyn) || gsyn.Error() != wsyn.Error() || gsyn.Offset != wsyn.Offset:
		t.Fatalf("Raw(%q): error %v; want encoding/json's %v (offset %d)", raw, err, wsyn, wsyn.Offset)
	case err.Error() != "memkit/buffer: JSON: Raw value is not valid JSON: "+wsyn.Error():
		t.Fatalf("Raw(%q): error text %q", raw, err)
	}
}

// Issue 25: Raw wrote raw as given, where json.Marshal(json.RawMessage(x))
// compacts it and escapes HTML characters and U+2028/U+2029 (7 of 30 cases
// differed).
func TestJSON_RawMatchesMarshalRawMessage(t *testing.T) {
	cases := []string{
		// values, compact and spaced
		`{"a":1}`, ` {"a" : [1, 2 ,3]} `, "\t\n\r 1 \n", `true`, `false`, `null`, "  null  ",
		`{}`, `[]`, `[ ]`, `{ }`, `""`, `"  spaces  inside  "`,
		// nesting
		`{"a":{"b":{"c":[{"d":null},[[]],{}]}}}`,
		"{\n  \"a\": {\n    \"b\": [\n      1,\n      {\"c\": \"d e\"}\n    ]\n  }\n}\n",
		// HTML characters and the line separators, in keys and values
		`"<script>&</script>"`, `{"html":"<>&","k<":">v"}`, "\"\u2028\u2029\"", "[\"a\u2028b\", \"c\u2029\"]",
		`"already \u003c \u2028 escaped"`, `"\\u003c"`, `"\\"`, `{"a":"\\"}`,
		// strings with escapes, non-ASCII, invalid UTF-8 (json.Valid accepts it)
		`"esc \" \\ \/ \b \f \n \r \t \u00e9 \ud834\udd1e"`, `"é☺𝄞"`, "\"\xff invalid \xe2\x80 utf8\"", "\"\xe2\x80\xa8\"",
		// numbers
		`[1, 2.5e10 , -0, 1E-7, 0.1, -1.5e-300]`, `123456789012345678901234567890`, `-0.0`,
		// invalid
		``, ` `, `{`, `1 2`, `[1,]`, `{"a"}`, `'x'`, `nul`, `"unterminated`, "\"ctl\x01\"", `{"a":1}}`,
		`01`, `[1 2]`, `NaN`, `<`, "\"\u2028", `{"a":<}`,
	}
	if len(cases) < 30 {
		t.Fatal("the issue asks for at least 30 cases")
	}
	for _, c := range cases {
		for _, html := range []bool{true, false} {
			checkRaw(t, []byte(c), html)
		}
	}
	// A nil raw is a nil json.RawMessage: null.
	for _, html := range []bool{true, false} {
		checkRaw(t, nil, html)
	}
}

// randomJSON appends a random JSON value of at most depth levels, with
// random whitespace between tokens and strings full of what Raw must
// escape or keep.
func randomJSON(r *rand.Rand, dst []byte, depth int) []byte {
	ws := func(dst []byte) []byte {
		for range r.IntN(3) {
			dst = append(dst, " \t\n\r"[r.IntN(4)])
		}
		return dst
	}
	str := func(dst []byte) []byte {
		dst = append(dst, '"')
		for range r.IntN(8) {
			pieces := []string{"a", " ", "<", ">", "&", "\u2028", "\u2029", "é", "\xff", `\"`, `\\`, `\n`, `\u003c`, `\u2028`, "\xe2\x80", "\xe2"}
			dst = append(dst, pieces[r.IntN(len(pieces))]...)
		}
		return append(dst, '"')
	}
	dst = ws(dst)
	k := r.IntN(8)
	if depth == 0 {
		k %= 4
	}
	switch k {
	case 0:
		dst = str(dst)
	case 1:
		dst = strconv.AppendFloat(dst, r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)), 'g', -1, 64)
	case 2:
		dst = append(dst, []string{"true", "false", "null"}[r.IntN(3)]...)
	case 3:
		dst = strconv.AppendInt(dst, r.Int64()>>r.IntN(64), 10)
	case 4, 5:
		dst = append(dst, '[')
		for i := range r.IntN(4) {
			if i > 0 {
				dst = append(ws(dst), ',')
			}
			dst = randomJSON(r, dst, depth-1)
		}
		dst = append(ws(dst), ']')
	default:
		dst = append(dst, '{')
		for i := range r.IntN(4) {
			if i > 0 {
				dst = append(ws(dst), ',')
			}
			dst = str(ws(dst))
			dst = append(ws(dst), ':')
			dst = randomJSON(r, dst, depth-1)
		}
		dst = append(ws(dst), '}')
	}
	return ws(dst)
}

// Random documents, and the same documents with a byte changed, cut short
// or doubled, against json.Marshal(json.RawMessage(x)) in both modes.
func TestJSON_RawMatchesMarshalOnRandomDocuments(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 1))
	n := 5000
	if testing.Short() {
		n = 500
	}
	var doc []byte
	for range n {
		doc = randomJSON(r, doc[:0], 4)
		html := r.IntN(2) == 0
		checkRaw(t, doc, html)
		bad := append([]byte(nil), doc...)
		switch r.IntN(3) {
		case 0:
			bad[r.IntN(len(bad))] = "{}[],:\"\\x<\u2028 "[r.IntN(14)]
		case 1:
			bad = bad[:r.IntN(len(bad))]
		case 2:
			bad = append(bad, doc...)
		}
		checkRaw(t, bad, html)
	}
}

// float32s returns float32 values whose formatting differs in some way:
// zeros, subnormals, the extremes, the neighbours of the exponent cutoffs
// 1e-6 and 1e21, and count random bit patterns, a quarter of them
// subnormal (NaN and infinities included: they must be refused).
func float32s(count int) []float32 {
	vs := []float32{
		0, float32(math.Copysign(0, -1)), 0.1, 1.0 / 3, 16777216, 16777217, 1, -1, 1e20, 1e21, 1e-6, 1e-7,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32,
		math.Float32frombits(0x007fffff), math.Float32frombits(0x00800000), // largest subnormal, smallest normal
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	}
	for _, cut := range []float32{1e-6, 1e21} {
		vs = append(vs, math.Nextafter32(cut, 0), math.Nextafter32(cut, float32(math.Inf(1))),
			-math.Nextafter32(cut, 0), -math.Nextafter32(cut, float32(math.Inf(1))))
	}
	r := rand.New(rand.NewPCG(32, 25))
	for i := range count {
		bits := r.Uint32()
		if i%4 == 0 {
			bits &= 0x807fffff // exponent 0: subnormal or zero
		}
		vs = append(vs, math.Float32frombits(bits))
	}
	return vs
}

// Issue 25: there was no float32 writer; float32(0.1) through Float wrote
// 0.10000000149011612. Float32 writes what encoding/json writes for a
// float32, for 10^5 random values and the edge cases.
func TestJSON_Float32MatchesEncodingJSON(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 10000
	}
	b := buffer.Get()
	defer b.Free()
	for _, f := range float32s(n) {
		b.Reset()
		j := buffer.NewJSON(b)
		j.Float32(f)
		err := j.Err()
		want, werr := json.Marshal(f)
		switch {
		case werr != nil && err != buffer.ErrNonFinite:
			t.Fatalf("Float32(%v): %q, %v; want ErrNonFinite", f, b.Bytes(), err)
		case werr == nil && (err != nil || !bytes.Equal(b.Bytes(), want)):
			t.Fatalf("Float32(%v) (bits %#x): %q, %v; encoding/json %s", f, math.Float32bits(f), b.Bytes(), err, want)
		}
	}
	if got, _ := write(t, true, func(j *buffer.JSON) { j.Float32(0.1) }); got != "0.1" {
		t.Fatalf("Float32(0.1) = %s", got)
	}
}
