package checked

import "testing"

func TestFill(t *testing.T) {
	for _, n := range []int{0, 1, 7, 64, 1000} {
		b := make([]byte, n)
		Fill(b, PoisonByte)
		for i, c := range b {
			if c != PoisonByte {
				t.Fatalf("n=%d: byte %d not poisoned", n, i)
			}
		}
	}
}

func TestIndexNot(t *testing.T) {
	for n := range 40 {
		b := make([]byte, n)
		Fill(b, PoisonByte)
		if i := IndexNot(b, PoisonByte); i != -1 {
			t.Fatalf("n=%d: IndexNot = %d on all poison", n, i)
		}
		for k := range n {
			b[k] = 1
			if i := IndexNot(b, PoisonByte); i != k {
				t.Fatalf("n=%d: IndexNot = %d; want %d", n, i, k)
			}
			b[k] = PoisonByte
		}
	}
}
