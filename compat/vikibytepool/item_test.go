package bytepool_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memkit/memkit/buffer"
	bytepool "github.com/memkit/memkit/compat/vikibytepool"
	"github.com/memkit/memkit/internal/memtest"
)

// TestVikiProgram_HTTPBody is the write-up's handler: the request body read
// into a checked-out item, served back.
func TestVikiProgram_HTTPBody(t *testing.T) {
	var pool = bytepool.New(64, 32768)
	handler := func(res http.ResponseWriter, req *http.Request) {
		buffer := pool.Checkout()
		defer buffer.Close()
		buffer.ReadFrom(req.Body)
		body := buffer.Bytes()
		res.Write(body)
	}
	srv := httptest.NewServer(http.HandlerFunc(handler))
	defer srv.Close()
	for _, size := range []int{0, 1, 1000, 32768, 40000} { // 40000: past the capacity
		body := bytes.Repeat([]byte{'a' + byte(size%26)}, size)
		res, err := http.Post(srv.URL, "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !bytes.Equal(got, body) {
			t.Fatalf("size %d: echoed %d bytes, not the body", size, len(got))
		}
	}
	if pool.Len() != 64 {
		t.Fatalf("Len %d after every item was closed; want 64", pool.Len())
	}
}

// TestVikiProgram_JsonArray is the write-up's benchmark body: an array of
// 20000 integers, which passes the item's capacity and is expanded, not
// truncated as Viki's was.
func TestVikiProgram_JsonArray(t *testing.T) {
	pool := bytepool.NewJson(4, 32768)
	buffer := pool.Checkout()
	defer buffer.Close()
	buffer.BeginArray()
	for i := 0; i < 20000; i++ {
		buffer.WriteInt(i)
	}
	buffer.EndArray()
	var got []int
	if err := json.Unmarshal(buffer.Bytes(), &got); err != nil || len(got) != 20000 || got[19999] != 19999 {
		t.Fatalf("%d ints, err %v", len(got), err)
	}
}

func TestItem_ReadReturnsEOFWithTheLastBytes(t *testing.T) {
	item := bytepool.New(1, 64).Checkout()
	item.WriteString("hello")
	p := make([]byte, 3)
	if n, err := item.Read(p); n != 3 || err != nil || string(p) != "hel" {
		t.Fatalf("Read = %d, %v, %q", n, err, p)
	}
	if item.Drained() {
		t.Fatal("Drained with 2 bytes unread")
	}
	if n, err := item.Read(p); n != 2 || err != io.EOF || string(p[:2]) != "lo" {
		t.Fatalf("draining Read = %d, %v; want 2, io.EOF", n, err)
	}
	if !item.Drained() || item.String() != "hello" {
		t.Fatalf("Drained %v, String %q", item.Drained(), item.String())
	}
	if n, err := item.Read(p); n != 0 || err != io.EOF {
		t.Fatalf("Read after the end = %d, %v", n, err)
	}
}

func TestItem_PositionMovesTheLengthBothWays(t *testing.T) {
	item := bytepool.New(1, 16).Checkout()
	item.WriteString("abcdef")
	if !item.Position(2) || item.String() != "ab" {
		t.Fatalf("Position(2): %q", item.String())
	}
	copy(item.Raw()[2:], "XYZ") // written straight into the storage
	if !item.Position(5) || item.String() != "abXYZ" {
		t.Fatalf("Position(5) forward: %q", item.String())
	}
	if item.Position(17) || item.Position(-1) || item.String() != "abXYZ" {
		t.Fatal("Position outside 0..capacity did not report false, or changed the item")
	}
	if !item.Position(16) || !item.Full() || len(item.Raw()) != 16 {
		t.Fatalf("Position(16): Full %v, Raw %d", item.Full(), len(item.Raw()))
	}
}

func TestItem_TrimLastIf(t *testing.T) {
	item := bytepool.New(1, 16).Checkout()
	item.WriteString("a,b,")
	if !item.TrimLastIf(',') || item.String() != "a,b" {
		t.Fatalf("TrimLastIf(','): %q", item.String())
	}
	if item.TrimLastIf(',') || item.String() != "a,b" {
		t.Fatal("TrimLastIf trimmed a byte that was not the one asked")
	}
	item.Position(0)
	if item.TrimLastIf('a') {
		t.Fatal("TrimLastIf on an empty item")
	}
}

func TestItem_StrictRefusesInsteadOfTruncating(t *testing.T) {
	pool := bytepool.New(1, 8, bytepool.WithOverflow(bytepool.Strict))
	item := pool.Checkout()
	item.WriteString("12345")
	if n, err := item.Write([]byte("6789")); n != 0 || !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("Write past the capacity = %d, %v", n, err)
	}
	if n := item.WriteString("6789"); n != 0 || item.String() != "12345" {
		t.Fatalf("WriteString past the capacity = %d, item %q", n, item.String())
	}
	item.WriteString("678")
	if !item.Full() || item.WriteByte('9') != io.ErrShortWrite {
		t.Fatal("a full Strict item took a byte")
	}
	item.Position(0)
	if n, err := item.ReadFrom(strings.NewReader("0123456789")); n != 8 || !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("ReadFrom past the capacity = %d, %v", n, err)
	}
	item.Close()
}

func TestItem_ExpandGrowsPastTheCapacity(t *testing.T) {
	item := bytepool.New(1, 8).Checkout()
	if n, err := item.Write([]byte("0123456789")); n != 10 || err != nil || item.String() != "0123456789" {
		t.Fatalf("Write = %d, %v, %q", n, err, item.String())
	}
	item.Close()
}

func TestItem_CloseTwiceReturnsErrClosed(t *testing.T) {
	pool := bytepool.New(2, 8)
	item := pool.Checkout()
	if err := item.Close(); err != nil {
		t.Fatal(err)
	}
	if err := item.Close(); err != buffer.ErrClosed {
		t.Fatalf("second Close = %v; want buffer.ErrClosed", err)
	}
	if pool.Len() != 2 {
		t.Fatalf("Len %d; want 2", pool.Len())
	}
}

func TestPool_MissesCountsCheckoutsOfAnEmptyPool(t *testing.T) {
	pool := bytepool.New(1, 8)
	a, b := pool.Checkout(), pool.Checkout()
	if pool.Misses() != 1 || pool.Len() != 0 {
		t.Fatalf("Misses %d Len %d", pool.Misses(), pool.Len())
	}
	a.Close()
	b.Close()
	if pool.Len() != 1 {
		t.Fatalf("Len %d: the miss was kept", pool.Len())
	}
}

func TestJsonItem_WritersEscapeAsEncodingJSON(t *testing.T) {
	when := time.Date(2013, 11, 5, 1, 2, 3, 0, time.UTC)
	nasty := "q\"b\\n\nt\t<a>&\u2028\x01"
	item := bytepool.NewJson(1, 16).Checkout() // small: expanded as it goes
	defer item.Close()
	item.BeginObject()
	item.WriteKeyString("s", nasty)
	item.WriteKeySafeString("safe", nasty)
	item.WriteKeyInt("i", -42)
	item.WriteKeyBool("b", true)
	item.WriteKeyTime("t", when)
	item.WriteKeyValue("raw", `{"x":[1,2]}`)
	item.WriteKeyObject("o")
	item.WriteKeyArray("a")
	item.WriteString(nasty)
	item.WriteSafeString("x")
	item.WriteInt(7)
	item.WriteBool(false)
	item.WriteTime(when)
	item.BeginArray()
	item.EndArray()
	item.BeginObject()
	item.EndObject()
	item.EndArray()
	item.EndObject()
	item.EndObject()
	if err := item.Err(); err != nil {
		t.Fatal(err)
	}
	wantStr := `{"s":` + quote(nasty) + `,"safe":` + quote(nasty) + `,"i":-42,"b":true,"t":"2013-11-05T01:02:03Z","raw":{"x":[1,2]},"o":{"a":[` +
		quote(nasty) + `,"x",7,false,"2013-11-05T01:02:03Z",[],{}]}}`
	if item.String() != wantStr {
		t.Fatalf("got  %s\nwant %s", item.String(), wantStr)
	}
	if !json.Valid(item.Bytes()) {
		t.Fatal("invalid JSON")
	}
}

// quote is encoding/json's encoding of s.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestJsonItem_OutOfSequenceIsRefusedAndReported(t *testing.T) {
	item := bytepool.NewJson(1, 64).Checkout()
	defer item.Close()
	item.BeginArray()
	item.WriteInt(1)
	if n, err := item.EndObject(); n != 0 || !errors.Is(err, buffer.ErrJSON) {
		t.Fatalf("EndObject in an array = %d, %v", n, err)
	}
	if item.String() != "[1" {
		t.Fatalf("a refused call wrote: %q", item.String())
	}
	if item.WriteKeyValue("k", "{not json") != 0 {
		t.Fatal("a write after an error wrote")
	}
}

func TestJsonItem_StrictFullIsReported(t *testing.T) {
	item := bytepool.NewJson(1, 8, bytepool.WithOverflow(bytepool.Strict)).Checkout()
	defer item.Close()
	item.BeginArray()
	item.WriteString("0123456789")
	if err := item.Err(); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("Err = %v; want io.ErrShortWrite", err)
	}
	if item.String() != "[" {
		t.Fatalf("item holds %q", item.String())
	}
}

func TestJsonEncode(t *testing.T) {
	if got := bytepool.JsonEncode("a\"b\n<"); got != `a\"b\n\u003c` {
		t.Fatalf("JsonEncode = %s", got)
	}
}

func TestItem_WriteAndReadAllocateNothing(t *testing.T) {
	item := bytepool.New(1, 4096).Checkout()
	p := make([]byte, 64)
	if n := testing.AllocsPerRun(1000, func() {
		item.Position(0)
		item.WriteString("0123456789")
		item.Write(p)
		item.TrimLastIf(0)
		for {
			if _, err := item.Read(p); err == io.EOF {
				break
			}
		}
	}); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}

// BenchmarkJsonArray is the write-up's benchmark: a JSON array of 20000
// integers, by string concatenation of strconv (array join) and by a
// JSON item.
func BenchmarkJsonArray(b *testing.B) {
	const count = 20000
	b.Run("impl=join", func(b *testing.B) {
		b.ReportAllocs()
		for j := 0; j < b.N; j++ {
			list := make([]string, count)
			for i := range list {
				list[i] = strconv.Itoa(i)
			}
			_ = `[` + strings.Join(list, `,`) + `]`
		}
	})
	b.Run("impl=memkit", func(b *testing.B) {
		pool := bytepool.NewJson(4, 128<<10)
		b.ReportAllocs()
		for j := 0; j < b.N; j++ {
			buffer := pool.Checkout()
			buffer.BeginArray()
			for i := 0; i < count; i++ {
				buffer.WriteInt(i)
			}
			buffer.EndArray()
			buffer.Close()
		}
	})
}

// New and NewJson have no error result, as Viki's: what buffer.NewFixedPool
// refuses, they panic with, naming the constructor. WithBudget(0) is
// refused: a budget is leaving the option out.
func TestNew_BadParametersPanic(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"count", func() { bytepool.New(0, 10) }, "memkit/vikibytepool: New: memkit/buffer: count 0 must be between 1 and 2^31-1"},
		{"capacity", func() { bytepool.New(1, 0) }, "memkit/vikibytepool: New: memkit/buffer: size 0 must be at least 1"},
		{"budget=0", func() { bytepool.New(1, 10, buffer.WithBudget(0)) },
			"memkit/vikibytepool: New: memkit/buffer: WithBudget(0): a budget is a number of bytes > 0; leave the option out for no limit"},
		{"NewJson,budget=-1", func() { bytepool.NewJson(1, 10, buffer.WithBudget(-1)) },
			"memkit/vikibytepool: NewJson: memkit/buffer: WithBudget(-1): a budget is a number of bytes > 0; leave the option out for no limit"},
	} {
		t.Run(c.name, func(t *testing.T) { memtest.CheckPanic(t, c.want, c.f) })
	}
}

// TestItem_UseAfterClosePanics: issue 21 case 9. Every call but Close on an
// Item or JsonItem after Close was a nil-pointer panic; it is now memkit's
// message, and the pool is unchanged.
func TestItem_UseAfterClosePanics(t *testing.T) {
	const want = "memkit/vikibytepool: use of an Item after Close; Checkout another"
	p := bytepool.New(2, 64)
	it := p.Checkout()
	it.WriteString("x")
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(){
		"Write":       func() { it.Write([]byte("a")) },
		"WriteByte":   func() { it.WriteByte('a') },
		"WriteString": func() { it.WriteString("a") },
		"ReadFrom":    func() { it.ReadFrom(strings.NewReader("a")) },
		"Read":        func() { it.Read(make([]byte, 4)) },
		"Bytes":       func() { it.Bytes() },
		"Raw":         func() { it.Raw() },
		"String":      func() { _ = it.String() },
		"Len":         func() { it.Len() },
		"TrimLastIf":  func() { it.TrimLastIf('x') },
		"Position":    func() { it.Position(0) },
		"Full":        func() { it.Full() },
		"Drained":     func() { it.Drained() },
	} {
		t.Run("Item."+name, func(t *testing.T) { memtest.CheckPanic(t, want, f) })
	}
	if err := it.Close(); err != buffer.ErrClosed {
		t.Fatalf("second Close = %v", err)
	}

	jp := bytepool.NewJson(2, 64)
	j := jp.Checkout()
	j.BeginObject()
	j.Close()
	for name, f := range map[string]func(){
		"WriteString":     func() { j.WriteString("a") },
		"WriteSafeString": func() { j.WriteSafeString("a") },
		"WriteInt":        func() { j.WriteInt(1) },
		"WriteBool":       func() { j.WriteBool(true) },
		"WriteTime":       func() { j.WriteTime(time.Unix(0, 0)) },
		"WriteKeyString":  func() { j.WriteKeyString("k", "v") },
		"WriteKeyInt":     func() { j.WriteKeyInt("k", 1) },
		"WriteKeyBool":    func() { j.WriteKeyBool("k", true) },
		"WriteKeyTime":    func() { j.WriteKeyTime("k", time.Unix(0, 0)) },
		"WriteKeyValue":   func() { j.WriteKeyValue("k", "1") },
		"WriteKeyArray":   func() { j.WriteKeyArray("k") },
		"WriteKeyObject":  func() { j.WriteKeyObject("k") },
		"BeginArray":      func() { j.BeginArray() },
		"EndArray":        func() { j.EndArray() },
		"BeginObject":     func() { j.BeginObject() },
		"EndObject":       func() { j.EndObject() },
		"Err":             func() { j.Err() },
		"Item.Bytes":      func() { j.Bytes() },
	} {
		t.Run("JsonItem."+name, func(t *testing.T) { memtest.CheckPanic(t, want, f) })
	}
	if err := j.Close(); err != buffer.ErrClosed {
		t.Fatalf("second Close = %v", err)
	}
	if p.Len() != 2 || jp.Len() != 2 {
		t.Fatalf("pools hold %d and %d items; want 2 each", p.Len(), jp.Len())
	}
}

// An empty value is no JSON value: refused, as any invalid one, even though
// buffer.JSON.Raw writes null for a nil slice.
func TestJsonItem_EmptyValueIsRefused(t *testing.T) {
	item := bytepool.NewJson(1, 64).Checkout()
	defer item.Close()
	item.BeginObject()
	if item.WriteKeyValue("k", ""); !errors.Is(item.Err(), buffer.ErrJSON) || strings.Contains(item.String(), "null") {
		t.Fatalf("WriteKeyValue of \"\": %q, %v", item.String(), item.Err())
	}
}
