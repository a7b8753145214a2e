package kv_test

import (
	"errors"
	"fmt"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/kv"
)

// A Map as a store with exact map semantics: nothing is dropped, and a
// full Map says so.
func Example() {
	m, err := kv.New(kv.WithBudget(64 << 20))
	if err != nil {
		panic(err)
	}
	defer m.Close() // gives the memory back to the OS

	m.Set([]byte("user:42"), []byte(`{"name":"Ada"}`))
	m.Set([]byte("user:43"), []byte(`{"name":"Grace"}`))

	v, ok := m.Get(nil, []byte("user:42")) // a copy, appended to dst
	fmt.Println(string(v), ok)

	m.View([]byte("user:43"), func(v []byte) { // no copy; v is valid only here
		fmt.Println(len(v), "bytes")
	})

	m.Delete([]byte("user:42"))
	fmt.Println(m.Len(), m.Has([]byte("user:42")))

	if err := m.Set(make([]byte, kv.MaxKeyLen+1), nil); errors.Is(err, kv.ErrTooLarge) {
		fmt.Println("key too long")
	}

	var st memkit.Stats
	m.ReadStats(&st)
	fmt.Println("live", st.LiveObjects, "stored", st.Allocs, "removed", st.Frees)
	// Output:
	// {"name":"Ada"} true
	// 16 bytes
	// 1 false
	// key too long
	// live 1 stored 2 removed 1
}

// A Map as a cache: at its budget it drops its oldest entries (those read
// since they were stored get a second chance) instead of refusing a Set.
func ExampleWithEviction() {
	m, err := kv.New(kv.WithBudget(8<<20), kv.WithEviction())
	if err != nil {
		panic(err)
	}
	defer m.Close()
	value := make([]byte, 1000)
	for i := range 20000 { // 20 MB into 8 MiB
		if err := m.Set(fmt.Appendf(nil, "k%d", i), value); err != nil {
			panic(err)
		}
	}
	fmt.Println(m.Has([]byte("k19999")), m.Has([]byte("k0")), m.Len()+int(m.Evictions()))
	// Output: true false 20000
}

// A Map for gigabytes of entries read at random, on a machine where a huge
// page's first write is cheap: past its first 64 MiB it asks the kernel
// for 2 MiB pages, so that a Get costs no TLB miss. Measure your program's
// latency percentiles with and without it (see WithHugePages).
func ExampleWithHugePages() {
	m, err := kv.New(kv.WithHugePages())
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.Set([]byte("user:42"), []byte(`{"name":"Ada"}`)); err != nil {
		panic(err)
	}
	v, ok := m.Get(nil, []byte("user:42"))
	fmt.Println(string(v), ok)
	// Output: {"name":"Ada"} true
}
