package kv_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/kv"
)

// The panics of the misuse table.
const (
	panicNil    = "memkit/kv: method called on a nil *Map (create it with kv.New)"
	panicClosed = "memkit/kv: use of a closed Map"
)

// withBystanders returns a Map holding a few entries and the check that
// they still hold their values: what a mistake must leave alone.
func withBystanders(t testing.TB) (*kv.Map, func() error) {
	m := mustNew(t, kv.WithShards(2))
	for i := range 20 {
		if err := m.Set(fmt.Appendf(nil, "by%d", i), val(i, 10+i*37)); err != nil {
			t.Fatal(err)
		}
	}
	return m, func() error {
		for i := range 20 {
			got, ok := m.Get(nil, fmt.Appendf(nil, "by%d", i))
			if !ok || !bytes.Equal(got, val(i, 10+i*37)) {
				return fmt.Errorf("bystander %d changed", i)
			}
		}
		return nil
	}
}

// mistakes is kv's misuse table: every mistake the safety table
// lists for kv, made as a user would make it.
var mistakes = []memtest.Mistake{
	{
		Name:    "a slice from `View` (or `Range`) kept and written to after fn returned",
		Release: "not caught: the write lands in the entry while it lives (in another entry once compaction moved it; a fault after Close)",
		Checked: "UseAfterFree: fn got a copy, poisoned when fn returned; reported by `memkit.Leaks` or when the copy leaves the quarantine",
		Op:      "memkit.Leaks", Kind: checked.UseAfterFree,
		Setup: func(t testing.TB) (func(), func() error) {
			m, intact := withBystanders(t)
			m.Set([]byte("viewed"), []byte("some value"))
			var kept []byte
			m.View([]byte("viewed"), func(v []byte) { kept = v })
			return func() {
					kept[2] = 'X'
					memtest.PanicWithLeaksError(m)
				}, func() error {
					if checked.Enabled {
						kept[2] = checked.PoisonByte // as it was, for the quarantine's later check
					}
					return intact()
				}
		},
	},
	{
		Name:    "a key over `MaxKeyLen` or a value over `MaxValueLen`",
		Release: "`Set` returns `ErrTooLarge` and stores nothing; `Get`, `Has`, `View` and `Delete` find no such key",
		Checked: "as release",
		Setup: func(t testing.TB) (func(), func() error) {
			m, intact := withBystanders(t)
			long := make([]byte, kv.MaxKeyLen+1)
			return func() {
					if err := m.Set(long, nil); err != kv.ErrTooLarge {
						panic(fmt.Sprint("Set of a long key: ", err))
					}
					if m.Has(long) || m.Delete(long) {
						panic("a long key was found")
					}
				}, func() error {
					if m.Len() != 20 {
						return fmt.Errorf("Len %d; want the 20 bystanders", m.Len())
					}
					return intact()
				}
		},
	},
	{
		Name:    "a method of a nil `*Map`",
		Release: "panic `" + panicNil + "`",
		Checked: "as release",
		Panic:   panicNil,
		Setup: func(t testing.TB) (func(), func() error) {
			var m *kv.Map
			return func() { m.Set([]byte("k"), nil) }, nil
		},
	},
	{
		Name:    "use of a `Map` after `Close`",
		Release: "panic `" + panicClosed + "` (every method but `ReadStats` and `Close`); never a fault",
		Checked: "as release",
		Panic:   panicClosed,
		Setup: func(t testing.TB) (func(), func() error) {
			m, _ := withBystanders(t)
			other, intact := withBystanders(t)
			_ = other
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			return func() { m.Get(nil, []byte("by1")) }, intact
		},
	},
}

func TestMistakes(t *testing.T) {
	memtest.RunMistakes(t, "kv", mistakes)
}
