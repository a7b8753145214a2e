package checked

import (
	"reflect"
	"runtime"
	"sync"
	"unsafe"
)

// trackers maps an allocator (the address of the value its StatsSource
// points to) to its tracker. An entry goes when the allocator is collected.
var trackers sync.Map // uintptr → *Tracker

type entry struct {
	key uintptr
	t   *Tracker
}

// Register ties t to the allocator owner, for [TrackerOf]. The entry is
// dropped when owner becomes unreachable; the tracker does not keep owner
// alive.
func Register[T any](owner *T, t *Tracker) {
	key := uintptr(unsafe.Pointer(owner))
	trackers.Store(key, t)
	// A new allocator may take owner's address before this cleanup runs:
	// delete the entry only if it is still t.
	runtime.AddCleanup(owner, func(e entry) { trackers.CompareAndDelete(e.key, e.t) }, entry{key, t})
}

// TrackerOf returns the tracker registered for src, a pointer to an
// allocator, or nil.
func TrackerOf(src any) *Tracker {
	v := reflect.ValueOf(src)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil
	}
	t, _ := trackers.Load(v.Pointer())
	tr, _ := t.(*Tracker)
	return tr
}
