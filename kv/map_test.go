package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/kv"
	"github.com/memkit/memkit/offheap"
)

func mustNew(t testing.TB, opts ...kv.Option) *kv.Map {
	t.Helper()
	m, err := kv.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func readStats(m *kv.Map) memkit.Stats {
	var st memkit.Stats
	m.ReadStats(&st)
	return st
}

// val returns a value of n bytes that depends on i.
func val(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j)
	}
	return b
}

func TestMap_SetGetDelete(t *testing.T) {
	m := mustNew(t)
	if _, ok := m.Get(nil, []byte("a")); ok || m.Has([]byte("a")) || m.Len() != 0 {
		t.Fatal("an empty Map has a key")
	}
	if err := m.Set([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := m.Set(nil, []byte("empty key")); err != nil {
		t.Fatal(err)
	}
	if err := m.Set([]byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	got, ok := m.Get([]byte("x:"), []byte("a"))
	if !ok || string(got) != "x:1" {
		t.Fatalf("Get = %q, %v; want x:1", got, ok)
	}
	if got, ok := m.Get(nil, []byte("")); !ok || string(got) != "empty key" {
		t.Fatalf("Get of the empty key = %q, %v", got, ok)
	}
	if got, ok := m.Get(nil, []byte("b")); !ok || len(got) != 0 {
		t.Fatalf("Get of an empty value = %q, %v", got, ok)
	}
	var seen string
	if !m.View([]byte("a"), func(v []byte) { seen = string(v) }) || seen != "1" {
		t.Fatalf("View saw %q", seen)
	}
	if m.View([]byte("zz"), func([]byte) { t.Fatal("fn called for an absent key") }) {
		t.Fatal("View of an absent key reported true")
	}
	if err := m.Set([]byte("a"), []byte("a longer value than before")); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Get(nil, []byte("a")); string(got) != "a longer value than before" {
		t.Fatalf("after the overwrite: %q", got)
	}
	if m.Len() != 3 {
		t.Fatalf("Len = %d; want 3", m.Len())
	}
	if !m.Delete([]byte("a")) || m.Delete([]byte("a")) || m.Has([]byte("a")) || m.Len() != 2 {
		t.Fatal("Delete")
	}
	st := readStats(m)
	if st.LiveObjects != 2 || st.Allocs != 4 || st.Frees != 2 || st.InUseBytes != 24+16 {
		t.Fatalf("stats %v", &st)
	}
}

// The Map against a Go map, on random operations with keys and values of
// many sizes, with compaction and index growth along the way.
func TestMap_AgainstGoMap(t *testing.T) {
	m := mustNew(t, kv.WithShards(4))
	model := map[string][]byte{}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200000 {
		k := fmt.Appendf(nil, "key-%d", r.IntN(5000))
		switch op := r.IntN(10); {
		case op < 5:
			v := val(i, r.IntN(300))
			if err := m.Set(k, v); err != nil {
				t.Fatal(err)
			}
			model[string(k)] = v
		case op < 7:
			_, want := model[string(k)]
			if got := m.Delete(k); got != want {
				t.Fatalf("op %d: Delete(%s) = %v; want %v", i, k, got, want)
			}
			delete(model, string(k))
		default:
			got, ok := m.Get(nil, k)
			want, wok := model[string(k)]
			if ok != wok || !bytes.Equal(got, want) {
				t.Fatalf("op %d: Get(%s) = %d bytes, %v; want %d, %v", i, k, len(got), ok, len(want), wok)
			}
		}
	}
	if m.Len() != len(model) {
		t.Fatalf("Len %d; want %d", m.Len(), len(model))
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	n := 0
	m.Range(func(k, v []byte) bool {
		n++
		if !bytes.Equal(model[string(k)], v) {
			t.Fatalf("Range: %s has the wrong value", k)
		}
		return true
	})
	if n != len(model) {
		t.Fatalf("Range saw %d entries; want %d", n, len(model))
	}
	st := readStats(m)
	if st.LiveObjects != uint64(len(model)) || st.Allocs-st.Frees != uint64(len(model)) {
		t.Fatalf("stats %v; want %d live", &st, len(model))
	}
}

// After heavy overwrites and deletes of different sizes, compaction brings
// the reserved memory back towards the live bytes.
func TestMap_CompactionReturnsMemory(t *testing.T) {
	m := mustNew(t, kv.WithShards(1))
	const n = 20000
	for i := range n {
		if err := m.Set(fmt.Appendf(nil, "k%d", i), val(i, 100+i%900)); err != nil {
			t.Fatal(err)
		}
	}
	full := readStats(m)
	for round := range 5 {
		for i := range n {
			if err := m.Set(fmt.Appendf(nil, "k%d", i), val(i+round, 100+(i*7+round*13)%900)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < n; i++ {
		if i%4 != 0 {
			m.Delete(fmt.Appendf(nil, "k%d", i))
		}
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	st := readStats(m)
	segs := st.ReservedBytes - 8*(1<<16) // less the index
	if st.LiveObjects != n/4 || segs > st.InUseBytes+st.InUseBytes/8+256<<10 {
		t.Fatalf("after the deletes: %v\nwhen full: %v", &st, &full)
	}
	for i := 0; i < n; i += 4 {
		if got, ok := m.Get(nil, fmt.Appendf(nil, "k%d", i)); !ok || !bytes.Equal(got, val(i+4, 100+(i*7+4*13)%900)) {
			t.Fatalf("k%d lost its value", i)
		}
	}
}

// Compaction runs in steps a Set or Delete each, so that no operation holds
// a shard's lock for a whole segment's slide: a pass spans several Sets,
// ends within a segment's worth of steps, and between the steps every
// entry reads back and the bookkeeping holds.
func TestMap_CompactionInSteps(t *testing.T) {
	m := mustNew(t, kv.WithShards(1))
	const n = 400 // ~200 KB of entries: one segment
	want := make([][]byte, n)
	for i := range n {
		want[i] = val(i, 300+i%400)
		if err := m.Set(fmt.Appendf(nil, "k%d", i), want[i]); err != nil {
			t.Fatal(err)
		}
	}
	maxSteps := 256<<10/kv.CompactStep + 2
	passes, run := 0, 0
	r := rand.New(rand.NewPCG(3, 4))
	for op := range 4000 {
		i := r.IntN(n)
		want[i] = val(op, 300+r.IntN(400))
		if err := m.Set(fmt.Appendf(nil, "k%d", i), want[i]); err != nil {
			t.Fatal(err)
		}
		if m.Sweeping() == 0 {
			if run > 0 {
				passes++
			}
			run = 0
			continue
		}
		if run++; run > maxSteps {
			t.Fatalf("op %d: a pass still under way after %d Sets; want it done within %d", op, run, maxSteps)
		}
		if err := m.Check(); err != nil {
			t.Fatalf("op %d, step %d of a pass: %v", op, run, err)
		}
		for j := range n {
			if got, ok := m.Get(nil, fmt.Appendf(nil, "k%d", j)); !ok || !bytes.Equal(got, want[j]) {
				t.Fatalf("op %d, step %d of a pass: k%d reads %d bytes, %v; want %d", op, run, j, len(got), ok, len(want[j]))
			}
		}
	}
	if passes < 5 {
		t.Fatalf("%d compaction passes spanned more than one Set; want at least 5", passes)
	}
}

func TestMap_BudgetIsExact(t *testing.T) {
	m := mustNew(t, kv.WithBudget(4<<20), kv.WithShards(1))
	var stored int
	var err error
	for i := 0; ; i++ {
		if err = m.Set(fmt.Appendf(nil, "k%d", i), val(i, 1000)); err != nil {
			stored = i
			break
		}
	}
	if !errors.Is(err, kv.ErrBudget) {
		t.Fatalf("Set past the budget: %v; want ErrBudget", err)
	}
	if m.Len() != stored || stored < 3500 {
		t.Fatalf("Len %d after %d Sets; want all kept", m.Len(), stored)
	}
	for i := range stored {
		if !m.Has(fmt.Appendf(nil, "k%d", i)) {
			t.Fatalf("k%d was dropped", i)
		}
	}
	// Deleting makes room again.
	for i := range 100 {
		m.Delete(fmt.Appendf(nil, "k%d", i))
	}
	if err := m.Set([]byte("again"), val(0, 1000)); err != nil {
		t.Fatalf("Set after deletes: %v", err)
	}
}

func TestMap_EvictionKeepsTheNewest(t *testing.T) {
	m := mustNew(t, kv.WithBudget(4<<20), kv.WithShards(1), kv.WithEviction())
	const n = 20000
	for i := range n {
		if err := m.Set(fmt.Appendf(nil, "k%d", i), val(i, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	ev := m.Evictions()
	if ev == 0 || uint64(m.Len())+ev != n {
		t.Fatalf("Len %d, evictions %d; want them to sum to %d", m.Len(), ev, n)
	}
	if !m.Has(fmt.Appendf(nil, "k%d", n-1)) || m.Has([]byte("k0")) {
		t.Fatal("eviction did not drop the oldest entries first")
	}
	if st := readStats(m); st.ReservedBytes > 4<<20 {
		t.Fatalf("stats %v: past the budget", &st)
	}
}

func TestMap_TooLarge(t *testing.T) {
	m := mustNew(t)
	if err := m.Set(make([]byte, kv.MaxKeyLen+1), nil); err != kv.ErrTooLarge {
		t.Fatalf("Set of a long key: %v", err)
	}
	big := make([]byte, 300<<10) // a segment of its own
	big[0], big[len(big)-1] = 1, 2
	if err := m.Set([]byte("big"), big); err != nil {
		t.Fatal(err)
	}
	if got, ok := m.Get(nil, []byte("big")); !ok || !bytes.Equal(got, big) {
		t.Fatal("the large value does not read back")
	}
	before := readStats(m)
	m.Delete([]byte("big"))
	if st := readStats(m); st.ReservedBytes >= before.ReservedBytes-300<<10 || st.Failures != 1 {
		t.Fatalf("after deleting the large value: %v (before %v)", &st, &before)
	}
}

func TestMap_GetSetDoNotAllocate(t *testing.T) {
	m := mustNew(t)
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
		m.Set(keys[i], val(i, 100))
	}
	dst := make([]byte, 0, 1024)
	v := val(7, 100)
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		dst, _ = m.Get(dst[:0], keys[i%len(keys)])
		m.Set(keys[(i*7)%len(keys)], v[:50+i%50])
		m.Has(keys[i%len(keys)])
		i++
	}); n != 0 {
		t.Fatalf("Get+Set+Has: %v allocs; want 0", n)
	}
}

func TestMap_ClosedPanics(t *testing.T) {
	m, err := kv.New()
	if err != nil {
		t.Fatal(err)
	}
	m.Set([]byte("a"), []byte("b"))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	const msg = "memkit/kv: use of a closed Map"
	memtest.CheckPanic(t, msg, func() { m.Get(nil, []byte("a")) })
	memtest.CheckPanic(t, msg, func() { m.Set([]byte("a"), nil) })
	memtest.CheckPanic(t, msg, func() { m.Delete([]byte("a")) })
	memtest.CheckPanic(t, msg, func() { m.Has([]byte("a")) })
	memtest.CheckPanic(t, msg, func() { m.View([]byte("a"), func([]byte) {}) })
	memtest.CheckPanic(t, msg, func() { m.Len() })
	memtest.CheckPanic(t, msg, func() { m.Range(func(k, v []byte) bool { return true }) })
	if st := readStats(m); st.ReservedBytes != 0 || st.LiveObjects != 0 {
		t.Fatalf("stats after Close: %v", &st)
	}
}

// Close gives every mapped byte back: offheap's mapped bytes return to
// where they were, and the process's RSS drops by the data.
func TestMap_CloseUnmapsEverything(t *testing.T) {
	if !offheap.MmapAvailable {
		t.Skip("no mmap here: the Map lives in the Go heap")
	}
	var before, during, after memkit.Stats
	offheap.ReadStats(&before)
	m, err := kv.New()
	if err != nil {
		t.Fatal(err)
	}
	const n, size = 40000, 1000 // 40 MB
	for i := range n {
		if err := m.Set(fmt.Appendf(nil, "k%d", i), val(i, size)); err != nil {
			t.Fatal(err)
		}
	}
	offheap.ReadStats(&during)
	rssDuring, rssOK := memtest.RSS()
	if during.InUseBytes < before.InUseBytes+n*size {
		t.Fatalf("mapped %d bytes for %d bytes of data", during.InUseBytes-before.InUseBytes, n*size)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	offheap.ReadStats(&after)
	if after.InUseBytes != before.InUseBytes {
		t.Fatalf("mapped bytes: %d before, %d after Close", before.InUseBytes, after.InUseBytes)
	}
	if rssAfter, ok := memtest.RSS(); ok && rssOK && rssDuring-rssAfter < n*size/2 {
		t.Fatalf("RSS %d with the Map, %d after Close: it did not drop by the data", rssDuring, rssAfter)
	}
}

// The Map's entries and index are not on the Go heap: storing 100 times as
// many entries adds no Go heap objects beyond a few per segment, so a GC
// cycle's work does not depend on the entry count.
func TestMap_GoHeapIndependentOfEntries(t *testing.T) {
	if !offheap.MmapAvailable {
		t.Skip("no mmap here: the Map lives in the Go heap")
	}
	heapWith := func(n int) (uint64, uint64) {
		m := mustNew(t)
		for i := range n {
			if err := m.Set(fmt.Appendf(nil, "k%d", i), val(i, 500)); err != nil {
				t.Fatal(err)
			}
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		runtime.KeepAlive(m)
		return ms.HeapAlloc, ms.HeapObjects
	}
	small, smallObjs := heapWith(1000)
	large, largeObjs := heapWith(100000) // 50 MB of values
	t.Logf("Go heap: %d bytes, %d objects with 1,000 entries; %d bytes, %d objects with 100,000 more", small, smallObjs, large, largeObjs)
	if large > small+1<<20 || largeObjs > smallObjs+2000 {
		t.Fatalf("Go heap with 1,000 entries %d bytes (%d objects), with 100,000 %d bytes (%d objects)",
			small, smallObjs, large, largeObjs)
	}
}

// A large Map carves its segments from regions: entries read back through
// overwrites of other sizes (compaction within carved segments), the
// regions go back as their segments empty, and Close unmaps the rest; with
// 4 KiB pages (the default) and with huge pages.
func TestMap_Regions(t *testing.T) {
	t.Run("pages=4KiB", func(t *testing.T) { testMapRegions(t, false) })
	t.Run("pages=huge", func(t *testing.T) { testMapRegions(t, true) })
}

func testMapRegions(t *testing.T, huge bool) {
	opts := []kv.Option{kv.WithShards(4)}
	if huge {
		opts = append(opts, kv.WithHugePages())
	}
	m, closeAndCheck := regionMap(t, opts...)
	const n = 8000 // 4.5 MB of entries: 18 segments, 3 regions at least
	for round := range 3 {
		for i := range n {
			if err := m.Set(fmt.Appendf(nil, "k%d", i), val(i+round, 100+(i*7+round*300)%1000)); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Check(); err != nil {
			t.Fatal(err)
		}
	}
	if r := m.Regions(); r < 3 {
		t.Fatalf("%d regions for %d entries; want 3 or more", r, n)
	}
	if spare := m.Spare(); (spare != 0) != huge {
		t.Fatalf("spare region at %#x with huge pages %v; want one exactly with huge pages", spare, huge)
	}
	for i := range n {
		if got, ok := m.Get(nil, fmt.Appendf(nil, "k%d", i)); !ok || !bytes.Equal(got, val(i+2, 100+(i*7+600)%1000)) {
			t.Fatalf("k%d lost its value", i)
		}
	}
	for i := range n {
		m.Delete(fmt.Appendf(nil, "k%d", i))
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	if r := m.Regions(); r > 4 { // the shards' current segments may stay
		t.Fatalf("%d regions left with the Map empty; want at most one per shard", r)
	}
	closeAndCheck()
}

// regionMap returns a Map made with opts that carves its segments from
// regions from the first, and a function that closes it and
// checks that every byte it mapped went back.
func regionMap(t *testing.T, opts ...kv.Option) (*kv.Map, func()) {
	t.Helper()
	if !offheap.MmapAvailable {
		t.Skip("no mmap here: the Map lives in the Go heap")
	}
	old := kv.SetRegionsAfter(0)
	t.Cleanup(func() { kv.SetRegionsAfter(old) })
	var before memkit.Stats
	offheap.ReadStats(&before)
	m := mustNew(t, opts...)
	return m, func() {
		t.Helper()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		var after memkit.Stats
		offheap.ReadStats(&after)
		if r := m.Regions(); r != 0 || after.InUseBytes != before.InUseBytes {
			t.Fatalf("after Close: %d regions, mapped bytes %d (before the Map %d)", r, after.InUseBytes, before.InUseBytes)
		}
	}
}

// A Map with huge pages keeps one spare region, mapped and touched by a
// goroutine of its own, and the Set that needs a new region takes it
// (without the fault of a huge page's first write); Close waits for a
// spare in preparation and unmaps it.
func TestMap_SpareRegion(t *testing.T) {
	m, closeAndCheck := regionMap(t, kv.WithShards(1), kv.WithHugePages())
	i := 0
	set := func() {
		t.Helper()
		if err := m.Set(fmt.Appendf(nil, "k%d", i), val(i, 1000)); err != nil {
			t.Fatal(err)
		}
		i++
	}
	for m.Regions() < 1 {
		set()
	}
	spare := m.Spare()
	if spare == 0 || spare == m.RegionAt(1) {
		t.Fatalf("spare region at %#x with region 1 at %#x; want a spare of its own", spare, m.RegionAt(1))
	}
	for m.Regions() < 2 {
		set()
	}
	if got := m.RegionAt(2); got != spare {
		t.Fatalf("the second region is at %#x; want the spare, at %#x", got, spare)
	}
	for k := range i {
		if got, ok := m.Get(nil, fmt.Appendf(nil, "k%d", k)); !ok || !bytes.Equal(got, val(k, 1000)) {
			t.Fatalf("k%d lost its value", k)
		}
	}
	set() // the spare for region 3 may be in preparation: Close waits for it
	closeAndCheck()
}
