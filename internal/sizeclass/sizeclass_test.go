package sizeclass

import "testing"

func TestTable_IndexIsSmallestFit(t *testing.T) {
	for _, per := range []int{1, 2, 4, 8} {
		tab, err := New(64, 1<<14, per, "min", "max", "per")
		if err != nil {
			t.Fatal(err)
		}
		j := 0
		for n := 0; n <= tab.Max(); n++ {
			for tab.Size(j) < n {
				j++
			}
			if got := tab.Index(n); got != j {
				t.Fatalf("per=%d: Index(%d) = %d (size %d); want %d (size %d)", per, n, got, tab.Size(got), j, tab.Size(j))
			}
			want := -1
			if tab.Size(j) == n {
				want = j
			}
			if got := tab.Exact(n); got != want {
				t.Fatalf("per=%d: Exact(%d) = %d; want %d", per, n, got, want)
			}
		}
		if got, want := tab.Len(), 1+8*per; got != want {
			t.Fatalf("per=%d: %d classes; want %d", per, got, want)
		}
	}
}

func TestNew_Errors(t *testing.T) {
	for _, tc := range []struct {
		min, max, per int
		want          string
	}{
		{48, 1024, 1, "min 48 must be a power of two >= 8"},
		{64, 1000, 1, "max 1000 must be a power of two"},
		{64, 32, 1, "max 32 < min 64"},
		{64, 1024, 128, "per 128 must be a power of two between 1 and 64"},
		{16, 1024, 4, "min 16 with per 4 gives classes 4 bytes apart; need at least 8 (raise min or lower per)"},
	} {
		if _, err := New(tc.min, tc.max, tc.per, "min", "max", "per"); err == nil || err.Error() != tc.want {
			t.Errorf("New(%d, %d, %d) = %v; want %q", tc.min, tc.max, tc.per, err, tc.want)
		}
	}
}
