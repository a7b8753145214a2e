package arena

import (
	"math"
	"reflect"
	"strings"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// Append appends elems to s and returns the result, as the built-in append
// does, but grows s in the arena: when s lacks capacity, the result is s
// extended in place if s is the last allocation of its chunk and the chunk
// has room, else a new slice of the arena, with about twice the capacity,
// into which s is copied. s need not come from the arena (a nil s starts a
// slice in it). As with append, the result may share memory with s. If the
// arena's budget is exhausted, the new slice comes from the Go heap. It
// panics if the arena was freed.
func Append[T any](a *Arena, s []T, elems ...T) []T {
	if a.freed {
		if checked.Enabled {
			a.freedMisuse("Append", unsafe.Pointer(a))
		}
		panic(msgFreed)
	}
	if len(elems) <= cap(s)-len(s) {
		return append(s, elems...)
	}
	if len(elems) > math.MaxInt-len(s) {
		panic(msgTooLarge)
	}
	n := len(s) + len(elems)
	newCap := grow(cap(s), n)
	if t, ok := extend(a, s, newCap); ok {
		return append(t, elems...)
	}
	t := MakeSlice[T](a, n, newCap)
	copy(t[copy(t, s):], elems)
	return t
}

// grow returns the capacity of a slice of capacity old grown to hold n:
// twice old, or n if that is more, and at least 4.
func grow(old, n int) int {
	c := max(old*2, n, 4)
	if c < n { // overflow
		c = n
	}
	return c
}

// extend returns s with capacity newCap, grown in place, if s ends where
// the current chunk of its element type is bumped from and the chunk has
// room for the rest.
func extend[T any](a *Arena, s []T, newCap int) ([]T, bool) {
	if cap(s) == 0 {
		return nil, false
	}
	k := typeKey[T]()
	e := &a.cache[cacheIndex(k)]
	if e.key != k {
		return nil, false
	}
	sl := e.s
	size := sizeOf[T]()
	if size == 0 || sl.base == nil || uintptr(newCap) > maxBytes/size {
		return nil, false
	}
	// s must lie in the current chunk (a heap object that ends where the
	// chunk starts does not) and end where its free space starts.
	start, base := uintptr(unsafe.Pointer(unsafe.SliceData(s))), uintptr(sl.base)
	if start < base || start+uintptr(cap(s))*size != base+sl.off {
		return nil, false
	}
	more := uintptr(newCap-cap(s)) * size
	if sl.off+more > sl.lim {
		return nil, false
	}
	if checked.Enabled {
		unpoison(sl.info, unsafe.Add(sl.base, sl.off), more)
	}
	sl.off += more
	return unsafe.Slice(unsafe.SliceData(s), newCap)[:len(s)], true
}

// CloneString returns a copy of s in the arena's memory; it is valid until
// the arena is reset or freed. If the arena's budget is exhausted, the copy
// is made on the Go heap. It panics if the arena was freed.
func CloneString(a *Arena, s string) string {
	if len(s) == 0 {
		if a.freed {
			if checked.Enabled {
				a.freedMisuse("CloneString", unsafe.Pointer(a))
			}
			panic(msgFreed)
		}
		return ""
	}
	b := MakeSlice[byte](a, len(s), len(s))
	copy(b, s)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// CloneBytes returns a copy of b in the arena's memory, with len and cap
// len(b), or nil if b is nil, as bytes.Clone does; it is valid until the
// arena is reset or freed. If the arena's budget is exhausted, the copy is
// made on the Go heap. It panics if the arena was freed.
func CloneBytes(a *Arena, b []byte) []byte {
	if b == nil {
		if a.freed {
			if checked.Enabled {
				a.freedMisuse("CloneBytes", unsafe.Pointer(a))
			}
			panic(msgFreed)
		}
		return nil
	}
	c := MakeSlice[byte](a, len(b), len(b))
	copy(c, b)
	return c
}

// Clone returns a shallow copy of s on the Go heap, no longer bound to any
// arena, so that it may outlive the arena it was allocated in: for a
// pointer, a pointer to a heap copy of the value it points to; for a slice,
// a heap copy of its elements (with cap equal to len); for a string, a
// heap copy. Nil pointers, nil slices and empty strings are returned as
// they are. The copy is shallow: pointers inside the value still point
// where they did, into the arena if they did. As in Go's arena package, T
// must be a pointer, slice or string type, or Clone panics.
//
// Unlike the experiment's Clone, which returns values not allocated from an
// arena untouched, this one cannot tell and always copies.
func Clone[T any](s T) T {
	v := reflect.ValueOf(&s).Elem()
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return s
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(v.Elem())
		return c.Convert(v.Type()).Interface().(T)
	case reflect.Slice:
		if v.IsNil() {
			return s
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		return c.Interface().(T)
	case reflect.String:
		c := reflect.New(v.Type()).Elem()
		c.SetString(strings.Clone(v.String()))
		return c.Interface().(T)
	}
	panic(msgClone)
}
