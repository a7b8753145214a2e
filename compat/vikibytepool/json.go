package bytepool

import (
	"encoding/json"
	"time"
	"unsafe"

	"github.com/memkit/memkit/buffer"
)

// JsonEncode escapes s for use inside a JSON string, as encoding/json does
// (Viki's escaped only " and \). It allocates; JsonItem's writers escape
// without allocating.
var JsonEncode = func(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b[1 : len(b)-1])
}

// JsonPool is Viki's pool of items with a JSON writer; see Pool.
type JsonPool struct {
	fp *buffer.FixedPool
}

// NewJson reserves count JSON items of capacity bytes, as New does.
func NewJson(count, capacity int, opts ...Option) *JsonPool {
	return &JsonPool{fp: newFixed("NewJson", count, capacity, opts)}
}

// Checkout returns an empty JSON item; give it back with JsonItem.Close.
func (p *JsonPool) Checkout() *JsonItem {
	it := &JsonItem{Item: Item{b: p.fp.Checkout()}}
	it.j = buffer.NewJSON(it.b)
	return it
}

// Len returns the number of items in the pool, ready for Checkout.
func (p *JsonPool) Len() int { return p.fp.Len() }

// Misses returns the number of Checkouts that found the pool empty (int32,
// as Viki's JsonPool had it).
func (p *JsonPool) Misses() int32 { return int32(p.fp.Misses()) }

// Unwrap returns the buffer.FixedPool underneath.
func (p *JsonPool) Unwrap() *buffer.FixedPool { return p.fp }

// JsonItem is an Item with Viki's JSON writers, on a [buffer.JSON]: commas
// and colons are placed automatically, strings are escaped as encoding/json
// escapes them, and a call that would make the document invalid writes
// nothing and is reported by Err. It embeds Item, not *Item as Viki's
// did: the writers and methods are the same, but code that took the
// embedded field (jsonItem.Item) gets a value.
//
// Each writer returns the number of bytes it wrote (0 when it wrote nothing:
// a call out of sequence, or a Strict item without room). Like Item,
// a JsonItem is not safe for concurrent use; nothing but its JSON writers may
// write to it while a document is being built. After Close every method
// but Close panics, as Item's do.
type JsonItem struct {
	Item
	j buffer.JSON
}

// wrote returns the bytes written since the length was before.
func (item *JsonItem) wrote(before int) int { return item.b.Len() - before }

// WriteString writes s as an escaped JSON string.
func (item *JsonItem) WriteString(s string) int {
	n := item.buf().Len()
	item.j.String(s)
	return item.wrote(n)
}

// WriteSafeString is WriteString: Viki skipped escaping here, which made
// invalid JSON of any string holding a quote; it escapes too.
func (item *JsonItem) WriteSafeString(s string) int { return item.WriteString(s) }

// WriteInt writes an integer.
func (item *JsonItem) WriteInt(value int) int {
	n := item.buf().Len()
	item.j.Int(int64(value))
	return item.wrote(n)
}

// WriteBool writes true or false.
func (item *JsonItem) WriteBool(value bool) int {
	n := item.buf().Len()
	item.j.Bool(value)
	return item.wrote(n)
}

// WriteTime writes value as a JSON string in RFC 3339 format (with
// nanoseconds when it has any, as time.Time's MarshalJSON).
func (item *JsonItem) WriteTime(value time.Time) int {
	n := item.buf().Len()
	item.j.Time(value)
	return item.wrote(n)
}

// key writes key and returns the length before it.
func (item *JsonItem) key(key string) int {
	n := item.buf().Len()
	item.j.Key(key)
	return n
}

// WriteKeyString writes "key":"value", escaped.
func (item *JsonItem) WriteKeyString(key, value string) int {
	n := item.key(key)
	item.j.String(value)
	return item.wrote(n)
}

// WriteKeySafeString is WriteKeyString (it escapes too).
func (item *JsonItem) WriteKeySafeString(key, value string) int {
	return item.WriteKeyString(key, value)
}

// WriteKeyInt writes "key":value.
func (item *JsonItem) WriteKeyInt(key string, value int) int {
	n := item.key(key)
	item.j.Int(int64(value))
	return item.wrote(n)
}

// WriteKeyBool writes "key":true or "key":false.
func (item *JsonItem) WriteKeyBool(key string, value bool) int {
	n := item.key(key)
	item.j.Bool(value)
	return item.wrote(n)
}

// WriteKeyTime writes "key":"<RFC 3339 time>".
func (item *JsonItem) WriteKeyTime(key string, value time.Time) int {
	n := item.key(key)
	item.j.Time(value)
	return item.wrote(n)
}

// WriteKeyValue writes "key":value where value is JSON already (a number,
// an object, ...). A value that is not one complete JSON value is refused
// (see Err), where Viki wrote it.
func (item *JsonItem) WriteKeyValue(key, value string) int {
	n := item.key(key)
	raw := unsafe.Slice(unsafe.StringData(value), len(value)) // Raw only reads it
	if raw == nil {
		raw = []byte{} // "" is no JSON value; a nil Raw would write null
	}
	item.j.Raw(raw)
	return item.wrote(n)
}

// WriteKeyArray writes "key":[ ; close it with EndArray.
func (item *JsonItem) WriteKeyArray(key string) int {
	n := item.key(key)
	item.j.BeginArray()
	return item.wrote(n)
}

// WriteKeyObject writes "key":{ ; close it with EndObject.
func (item *JsonItem) WriteKeyObject(key string) int {
	n := item.key(key)
	item.j.BeginObject()
	return item.wrote(n)
}

// BeginArray opens an array and reports whether it did.
func (item *JsonItem) BeginArray() bool {
	n := item.buf().Len()
	item.j.BeginArray()
	return item.wrote(n) > 0
}

// EndArray closes the innermost array. It returns the bytes written, or 0
// and the error Err reports if the innermost open value is not an array.
func (item *JsonItem) EndArray() (int, error) {
	n := item.buf().Len()
	item.j.EndArray()
	return item.end(n)
}

// BeginObject opens an object and reports whether it did.
func (item *JsonItem) BeginObject() bool {
	n := item.buf().Len()
	item.j.BeginObject()
	return item.wrote(n) > 0
}

// EndObject closes the innermost object, as EndArray.
func (item *JsonItem) EndObject() (int, error) {
	n := item.buf().Len()
	item.j.EndObject()
	return item.end(n)
}

func (item *JsonItem) end(before int) (int, error) {
	if w := item.wrote(before); w > 0 {
		return w, nil
	}
	return 0, item.j.Err()
}

// Err returns the first call that was refused (out of sequence, a value that
// is not JSON, a Strict item without room), or, if none, an error if the
// document is unfinished, or nil when the item holds exactly one valid JSON
// value. It matches buffer.ErrJSON or io.ErrShortWrite with errors.Is.
func (item *JsonItem) Err() error {
	item.buf() // panics after Close
	return item.j.Err()
}

// Close empties the item and gives it back to its pool; a second Close
// returns buffer.ErrClosed.
func (item *JsonItem) Close() error { return item.Item.Close() }
