package memtest

import (
	"strings"
	"testing"
)

func TestModel_DetectsOverlapAndChangedBytes(t *testing.T) {
	m := NewModel(1)
	mem := make([]byte, 100)
	if _, err := m.Add(mem[0:10:10]); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(mem[5:20:20]); err == nil || !strings.Contains(err.Error(), "overlaps live block 0") {
		t.Fatalf("overlapping Add: %v", err)
	}
	if _, err := m.Add(mem[10:30:30]); err != nil {
		t.Fatalf("adjacent Add: %v", err)
	}
	mem[15]++
	if err := m.VerifyAll(); err == nil || !strings.Contains(err.Error(), "changed while live") {
		t.Fatalf("VerifyAll after a write: %v", err)
	}
	other := NewModel(2)
	other.Live = append(other.Live, Block{Buf: mem[25:40:40]})
	if err := CheckDisjoint(m, other); err == nil {
		t.Fatal("CheckDisjoint missed an overlap across models")
	}
}

func TestFillVerify_OddLengths(t *testing.T) {
	for n := 0; n < 20; n++ {
		b := make([]byte, n)
		Fill(b, 7)
		if err := Verify(b, 7); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if n > 0 {
			b[n-1] ^= 1
			if Verify(b, 7) == nil {
				t.Fatalf("n=%d: a flipped last byte went unnoticed", n)
			}
		}
	}
}

func TestOps_Split(t *testing.T) {
	o := NewOps([]byte{1, 2, 3, 4, 5})
	s := o.Split(2, 2)
	if s[0].Byte() != 1 || s[0].Byte() != 2 || s[0].Byte() != 5 || s[1].Uint16() != 3|4<<8 || s[1].More() {
		t.Fatal("Split did not deal chunks round-robin")
	}
}

func TestPanicOf(t *testing.T) {
	if got := PanicOf(func() { panic("memkit/x: boom") }); got != "memkit/x: boom" {
		t.Fatalf("PanicOf = %q", got)
	}
	if got := PanicOf(func() {}); got != "" {
		t.Fatalf("PanicOf of a normal return = %q", got)
	}
}

func TestMutexRing_OverwritesOldestAndCopies(t *testing.T) {
	r := NewMutexRing(2)
	rec := []byte{1}
	r.Write(rec)
	rec[0] = 2 // the ring keeps its own copy
	r.Write(rec)
	r.Write([]byte{3}) // full: drops 1
	for _, want := range []byte{2, 3} {
		if v, ok := r.Read(); !ok || v[0] != want {
			t.Fatalf("Read = %v, %v; want [%d]", v, ok, want)
		}
	}
	if v, ok := r.Read(); ok {
		t.Fatalf("Read of an empty ring = %v", v)
	}
}

func TestFlatSecondHalf(t *testing.T) {
	const mib = 1 << 20
	if err := FlatSecondHalf([]uint64{10 * mib, 100 * mib, 100 * mib, 105 * mib, 100 * mib}); err != nil {
		t.Fatalf("flat run rejected: %v", err)
	}
	if err := FlatSecondHalf([]uint64{10 * mib, 100 * mib, 100 * mib, 150 * mib, 200 * mib}); err == nil {
		t.Fatal("growing run accepted")
	}
	// GC cycles make RSS swing: a trough at the half-way point with the
	// usual peaks after it is flat (a fixed pool's soak looked like this).
	swing := []uint64{24 * mib, 43 * mib, 25 * mib, 30 * mib, 24 * mib, 40 * mib, 24 * mib, 25 * mib}
	if err := FlatSecondHalf(swing); err != nil {
		t.Fatalf("swinging but flat run rejected: %v", err)
	}
	// A leak too slow to pass the first half's peak still shows as a trend.
	slow := []uint64{100 * mib, 20 * mib, 20 * mib, 20 * mib, 40 * mib, 45 * mib, 70 * mib, 80 * mib}
	if err := FlatSecondHalf(slow); err == nil || !strings.Contains(err.Error(), "median") {
		t.Fatalf("slowly growing run: %v, want a median report", err)
	}
	if r, ok := RSS(); ok && r < mib {
		t.Fatalf("RSS %d bytes", r)
	}
}
