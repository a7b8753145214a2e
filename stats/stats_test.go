package stats_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memkit/memkit/stats"
)

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{0, "0B"}, {1023, "1023B"}, {1024, "1KiB"}, {1536, "1.5KiB"},
		{1 << 20, "1MiB"}, {5 << 30, "5GiB"}, {1<<40 + 1<<39, "1.5TiB"},
	} {
		if got := stats.FormatBytes(tc.n); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q; want %q", tc.n, got, tc.want)
		}
	}
}

func TestStats_AddMergesClassesBySize(t *testing.T) {
	a := stats.Stats{Allocs: 1, InUseBytes: 64, Classes: []stats.ClassStats{{Size: 64, Allocs: 1}, {Size: 256, Allocs: 2}}}
	b := stats.Stats{Allocs: 2, BadFrees: 1, Classes: []stats.ClassStats{{Size: 128, Allocs: 5}, {Size: 256, Allocs: 3}, {Size: 512, Allocs: 1}}}
	a.Add(&b)
	if a.Allocs != 3 || a.BadFrees != 1 || a.InUseBytes != 64 {
		t.Fatalf("totals %+v", a)
	}
	got := fmt.Sprint(a.Classes)
	want := "[{64 0 0 0 0 1 0 0 0} {128 0 0 0 0 5 0 0 0} {256 0 0 0 0 5 0 0 0} {512 0 0 0 0 1 0 0 0}]"
	if got != want {
		t.Fatalf("classes %s; want %s", got, want)
	}
}

func TestStats_ResetKeepsCapacity(t *testing.T) {
	s := stats.Stats{Allocs: 5, Classes: make([]stats.ClassStats, 3, 8)}
	s.Reset()
	if s.Allocs != 0 || len(s.Classes) != 0 || cap(s.Classes) != 8 {
		t.Fatalf("after Reset: %+v cap %d", s, cap(s.Classes))
	}
}

func ExampleStats_String() {
	s := stats.Stats{
		InUseBytes: 4096, ReservedBytes: 8192, LiveObjects: 1,
		Allocs: 3, Frees: 2, Grows: 2,
		Classes: []stats.ClassStats{{Size: 4096, InUseBytes: 4096, ReservedBytes: 8192,
			LiveObjects: 1, IdleObjects: 1, Allocs: 3, Frees: 2, Grows: 2}},
	}
	fmt.Print(s.String())
	// Output:
	// in use 4KiB  reserved 8KiB  live 1  allocs 3  frees 2  fallbacks 0  failures 0  grows 2  releases 0  bad frees 0
	//      class       in use     reserved    live    idle      allocs       frees   grows  releases
	//       4KiB         4KiB         8KiB       1       1           3           2       2         0
}

func TestStats_Fragmentation(t *testing.T) {
	for _, tc := range []struct {
		free, largest uint64
		want          float64
	}{
		{0, 0, 0}, {4096, 4096, 0}, {4096, 1024, 0.75}, {1 << 20, 1, 1 - 1.0/(1<<20)},
	} {
		s := stats.Stats{FreeBytes: tc.free, LargestFree: tc.largest}
		if got := s.Fragmentation(); got != tc.want {
			t.Errorf("FreeBytes %d LargestFree %d: Fragmentation() = %v; want %v", tc.free, tc.largest, got, tc.want)
		}
	}
}

// Add sums FreeBytes and keeps the larger LargestFree: one request is
// served by one of the allocators folded together.
func TestStats_AddFreeRanges(t *testing.T) {
	a := stats.Stats{FreeBytes: 1000, LargestFree: 600}
	b := stats.Stats{FreeBytes: 3000, LargestFree: 400}
	a.Add(&b)
	if a.FreeBytes != 4000 || a.LargestFree != 600 {
		t.Fatalf("FreeBytes %d LargestFree %d; want 4000 and 600", a.FreeBytes, a.LargestFree)
	}
	if got := a.Fragmentation(); got != 0.85 {
		t.Fatalf("Fragmentation() = %v; want 0.85", got)
	}
	a.Reset()
	if a.FreeBytes != 0 || a.LargestFree != 0 || a.Fragmentation() != 0 {
		t.Fatalf("after Reset: %+v", a)
	}
}

func TestStats_StringFreeLineOnlyWithFreeBytes(t *testing.T) {
	s := stats.Stats{ReservedBytes: 8192, InUseBytes: 4096}
	if got := s.String(); strings.Contains(got, "largest free") || strings.Count(got, "\n") != 1 {
		t.Fatalf("no free bytes: %q; want the summary line alone", got)
	}
}

func ExampleStats_String_freeRanges() {
	s := stats.Stats{
		InUseBytes: 3 << 20, ReservedBytes: 4 << 20, LiveObjects: 12,
		Allocs: 20, Frees: 8, Grows: 4,
		FreeBytes: 1 << 20, LargestFree: 512 << 10,
	}
	fmt.Print(s.String())
	// Output:
	// in use 3MiB  reserved 4MiB  live 12  allocs 20  frees 8  fallbacks 0  failures 0  grows 4  releases 0  bad frees 0
	// free 1MiB  largest free 512KiB  fragmentation 0.50
}
