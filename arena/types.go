package arena

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/ptrfree"
)

// typeKey returns a key unique to T: the type descriptor of *T, read from
// the type word of an interface holding a nil *T. The conversion does not
// allocate, and in an instantiated generic function the descriptor is a
// load from its dictionary, so the key costs about one load.
func typeKey[T any]() unsafe.Pointer {
	var i any = (*T)(nil)
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&i))[0]
}

// sizeOf and alignOf are unsafe.Sizeof and unsafe.Alignof of T, read
// without a value of T: a `var zero T` makes one, which for a type above
// 10 MiB is a zeroed heap object per call (a type past the machine's memory
// ends the process with the runtime's fatal "out of memory" before any
// check can refuse it). The operand of unsafe.Sizeof is never evaluated.
func sizeOf[T any]() uintptr  { return unsafe.Sizeof(*(*T)(nil)) }
func alignOf[T any]() uintptr { return unsafe.Alignof(*(*T)(nil)) }

// typeInfo is what arenas know of an element type: how to make a chunk of
// it that the GC scans with the right layout, and how to clear one.
type typeInfo struct {
	size, align uintptr
	ptrs        bool
	// newChunk returns a zeroed allocation of n bytes, a multiple of size,
	// made as a []T so that the GC knows where its pointers are.
	newChunk func(n uintptr) unsafe.Pointer
	// clear zeroes n bytes from p, a multiple of size, with the write
	// barriers a pointerful type needs.
	clear func(p unsafe.Pointer, n uintptr)
	// recyclers holds, per chunk size in bytes, the chunks freed arenas
	// gave back, zeroed (or poisoned in the checked build): uintptr →
	// *sync.Pool.
	recyclers sync.Map
}

// infos holds the typeInfo of every element type seen: typeKey → *typeInfo.
var infos sync.Map

// infoFor returns T's typeInfo, made on first use.
func infoFor[T any]() *typeInfo {
	k := typeKey[T]()
	if v, ok := infos.Load(k); ok {
		return v.(*typeInfo)
	}
	ti := &typeInfo{
		size:  sizeOf[T](),
		align: alignOf[T](),
		ptrs:  ptrfree.HasPointers(reflect.TypeFor[T]()),
		newChunk: func(n uintptr) unsafe.Pointer {
			return unsafe.Pointer(unsafe.SliceData(make([]T, n/sizeOf[T]())))
		},
		clear: func(p unsafe.Pointer, n uintptr) {
			clear(unsafe.Slice((*T)(p), n/sizeOf[T]()))
		},
	}
	v, _ := infos.LoadOrStore(k, ti)
	return v.(*typeInfo)
}

// noscanInfo describes the chunks that pointer-free types share: words the
// GC does not scan, aligned to 8 bytes, the largest alignment of a Go type.
var noscanInfo = &typeInfo{
	size:  1,
	align: 8,
	newChunk: func(n uintptr) unsafe.Pointer {
		return unsafe.Pointer(unsafe.SliceData(make([]uint64, (n+7)/8)))
	},
	clear: func(p unsafe.Pointer, n uintptr) { clear(unsafe.Slice((*byte)(p), n)) },
}

// recycler returns the pool of idle chunks of n bytes of the type.
func (ti *typeInfo) recycler(n uintptr) *sync.Pool {
	if v, ok := ti.recyclers.Load(n); ok {
		return v.(*sync.Pool)
	}
	v, _ := ti.recyclers.LoadOrStore(n, new(sync.Pool))
	return v.(*sync.Pool)
}

// zeroBase is where zero-size objects and empty slices point, as
// runtime.zerobase is for new(struct{}).
var zeroBase uint64

// Poisoning, in the checked build (-tags memkitdebug).
//
// Pointer-free memory is poisoned byte by byte, with checked.PoisonByte. Pointerful memory is first
// cleared with write barriers, then overwritten a word at a time with a
// value that is no heap address (it is not even a canonical address on
// 64-bit machines), so the GC ignores it whether it reads it before or
// after the store. On 32-bit machines no such value exists and pointerful
// memory is not poisoned.

const (
	poisonByte = checked.PoisonByte
	poisonWord = uint64(poisonByte) * 0x0101010101010101
	// poisonPtrs reports whether pointerful memory is poisoned.
	poisonPtrs = checked.Enabled && unsafe.Sizeof(uintptr(0)) == 8
)

// poisons reports whether memory of type ti is poisoned in the checked
// build.
func (ti *typeInfo) poisons() bool { return checked.Enabled && (!ti.ptrs || poisonPtrs) }

// poison overwrites n bytes from p, already cleared, with poison.
func poison(ti *typeInfo, p unsafe.Pointer, n uintptr) {
	if !ti.poisons() || n == 0 {
		return
	}
	if ti.ptrs {
		w := unsafe.Slice((*uint64)(p), n/8)
		for i := range w {
			w[i] = poisonWord
		}
		return
	}
	checked.Fill(unsafe.Slice((*byte)(p), n), poisonByte)
}

// unpoison checks that n bytes from p still hold poison, panicking with a
// report of a write after free if they do not, and zeroes them: it is how
// memory is handed out in the checked build.
func unpoison(ti *typeInfo, p unsafe.Pointer, n uintptr) {
	if !ti.poisons() || n == 0 {
		return
	}
	if ti.ptrs {
		w := unsafe.Slice((*uint64)(p), n/8)
		bad := -1
		for i := range w {
			if w[i] != poisonWord && bad < 0 {
				bad = i
			}
			w[i] = 0
		}
		if bad >= 0 {
			writtenAfterFree(p, n, uintptr(bad)*8)
		}
		return
	}
	b := unsafe.Slice((*byte)(p), n)
	if i := checked.IndexNot(b, poisonByte); i >= 0 {
		clear(b)
		writtenAfterFree(p, n, uintptr(i))
	}
	clear(b)
}
