// Package kv is a goroutine-safe map from byte keys to byte values whose
// keys, values and index live where the garbage collector does not scan
// them: off-heap memory from [github.com/memkit/memkit/offheap] where it
// maps memory (Linux, macOS, the BSDs), pointer-free Go heap memory
// elsewhere.
//
// Use it for a large, long-lived set of byte values — a cache, a session or
// feature store, an index — where a map[string][]byte would make every GC
// cycle trace millions of objects and keep twice the data resident between
// cycles. A [Map] holding gigabytes costs a GC cycle what an empty one does.
//
//	m, err := kv.New()
//	...
//	defer m.Close()
//	m.Set([]byte("user:42"), []byte(`{"name":"Ada"}`))
//	v, ok := m.Get(nil, []byte("user:42"))
//
// By default the Map keeps exact map semantics: a Set that would pass
// [WithBudget] returns [ErrBudget] and nothing is ever dropped. With
// [WithEviction] it is a cache instead: a full Map drops its oldest
// entries to make room, and counts them ([Map.Evictions]).
package kv
