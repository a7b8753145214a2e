package slab

import (
	"fmt"
	"math/bits"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/memkit/memkit/internal/ptrfree"
)

// View returns a pointer to a T stored at the start of buf: the safe form of
// the (*T)(unsafe.Pointer(&buf[0])) cast go-slab users write. The pointer
// aliases buf (writes through it change buf and the reverse) and is valid
// as long as buf is.
//
// T must hold no Go pointer, because the GC does not scan slab memory (and
// off-heap memory is not the GC's at all): a pointer stored there would not
// keep its target alive. View panics, naming the first offending field, if
// T contains a pointer, unsafe.Pointer, string, slice, map, channel, func or
// interface, for example
//
//	memkit/slab: Person2.Name is a string: Go pointers cannot live in slab memory
//
// Use fixed-size arrays instead ([SetString] and [GetString] handle text in
// a [N]byte). The check uses reflection once per type and is cached;
// later calls for the same T cost a few nanoseconds and never allocate.
//
// View also panics if buf is shorter than T ("memkit/slab: View[T] needs
// 16 bytes, buffer has 10") or not aligned for T ("memkit/slab: View[T]
// needs 8-byte alignment"). Chunks of an [Arena] are 8-byte aligned when
// its slabs are, which they are when malloc is nil.
func View[T any](buf []byte) *T {
	ensurePointerFree[T]()
	var zero T
	size, align := unsafe.Sizeof(zero), unsafe.Alignof(zero)
	if uintptr(len(buf)) < size {
		panic(fmt.Sprintf("memkit/slab: View[%s] needs %d bytes, buffer has %d", typeName[T](), size, len(buf)))
	}
	p := unsafe.Pointer(unsafe.SliceData(buf))
	if uintptr(p)%align != 0 {
		panic(fmt.Sprintf("memkit/slab: View[%s] needs %d-byte alignment", typeName[T](), align))
	}
	return (*T)(p)
}

// ViewSlice returns the n values of type T stored at the start of buf, as a
// []T that aliases buf. It checks T, size and alignment as [View] does (the
// size against n values) and panics with "memkit/slab: negative size" if
// n < 0.
func ViewSlice[T any](buf []byte, n int) []T {
	if n < 0 {
		panic(msgNegative)
	}
	ensurePointerFree[T]()
	var zero T
	size, align := unsafe.Sizeof(zero), unsafe.Alignof(zero)
	if size != 0 && uint64(len(buf))/uint64(size) < uint64(n) {
		need := "2^64 or more"
		if hi, lo := bits.Mul64(uint64(size), uint64(n)); hi == 0 {
			need = strconv.FormatUint(lo, 10)
		}
		panic(fmt.Sprintf("memkit/slab: ViewSlice[%s] of %d needs %s bytes, buffer has %d",
			typeName[T](), n, need, len(buf)))
	}
	p := unsafe.Pointer(unsafe.SliceData(buf))
	if uintptr(p)%align != 0 {
		panic(fmt.Sprintf("memkit/slab: ViewSlice[%s] needs %d-byte alignment", typeName[T](), align))
	}
	if n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(p), n)
}

func ensurePointerFree[T any]() { ptrfree.MustCheck[T]("slab") }

func typeName[T any]() string { return ptrfree.Name(reflect.TypeFor[T]()) }

// SetString stores s in field, a fixed-size text field of a record (pass
// rec.Name[:] for a Name [25]byte), and fills the rest of field with zero
// bytes; [GetString] reads it back. It reports false and leaves field
// unchanged if s is longer than field or contains a zero byte, which would
// cut it short when read back: text is never silently truncated.
func SetString(field []byte, s string) bool {
	if len(s) > len(field) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return false
		}
	}
	clear(field[copy(field, s):])
	return true
}

// GetString returns the text [SetString] stored in field: its bytes up to
// the first zero byte, or all of them if there is none. It allocates the
// string; use [GetBytes] to read without allocating.
func GetString(field []byte) string { return string(GetBytes(field)) }

// GetBytes is [GetString] without the copy: it returns the text of field
// as a sub-slice of field, valid as long as field is.
func GetBytes(field []byte) []byte {
	for i, c := range field {
		if c == 0 {
			return field[:i]
		}
	}
	return field
}
