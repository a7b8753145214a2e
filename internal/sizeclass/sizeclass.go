// Package sizeclass computes size-class tables with O(1) lookup.
//
// A table covers sizes from Min to Max, both powers of two, with PerDoubling
// classes in every doubling (a power of two as well): with 4 per doubling the
// classes above 64 are 80, 96, 112, 128, 160, ..., which bounds the waste of
// rounding a request up to its class near 20%, as jemalloc's spacing does.
package sizeclass

import (
	"fmt"
	"math/bits"
)

// MinStep is the smallest distance between two classes. It keeps every class
// a multiple of 8 bytes, so that buffers carved from one slab stay aligned.
const MinStep = 8

// Table maps sizes to classes. It is immutable after New and safe for
// concurrent use.
type Table struct {
	min, max int
	minShift uint // log2(min)
	perShift uint // log2(per doubling)
	sizes    []int
}

// New returns the table for classes from min to max with per classes in each
// doubling. field names, used in errors, are those the caller exposes.
func New(min, max, per int, minName, maxName, perName string) (*Table, error) {
	switch {
	case min < MinStep || !isPow2(min):
		return nil, fmt.Errorf("%s %d must be a power of two >= %d", minName, min, MinStep)
	case !isPow2(max):
		return nil, fmt.Errorf("%s %d must be a power of two", maxName, max)
	case max < min:
		return nil, fmt.Errorf("%s %d < %s %d", maxName, max, minName, min)
	case per < 1 || per > 64 || !isPow2(per):
		return nil, fmt.Errorf("%s %d must be a power of two between 1 and 64", perName, per)
	case min/per < MinStep:
		return nil, fmt.Errorf("%s %d with %s %d gives classes %d bytes apart; need at least %d (raise %s or lower %s)",
			minName, min, perName, per, min/per, MinStep, minName, perName)
	}
	t := &Table{
		min:      min,
		max:      max,
		minShift: uint(bits.TrailingZeros(uint(min))),
		perShift: uint(bits.TrailingZeros(uint(per))),
	}
	t.sizes = append(t.sizes, min)
	for base := min; base < max; base *= 2 {
		step := base / per
		for j := 1; j <= per; j++ {
			t.sizes = append(t.sizes, base+j*step)
		}
	}
	return t, nil
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// Len reports the number of classes.
func (t *Table) Len() int { return len(t.sizes) }

// Size reports the size of class i.
func (t *Table) Size(i int) int { return t.sizes[i] }

// Sizes returns the class sizes, smallest first. The caller must not modify it.
func (t *Table) Sizes() []int { return t.sizes }

// Max reports the largest class size.
func (t *Table) Max() int { return t.max }

// Min reports the smallest class size.
func (t *Table) Min() int { return t.min }

// Index returns the smallest class whose size is at least n, for
// 0 <= n <= Max. It is O(1): a bit length, two shifts and an add.
func (t *Table) Index(n int) int {
	if n <= t.min {
		return 0
	}
	// 2^e < n <= 2^(e+1)
	e := uint(bits.Len(uint(n-1))) - 1
	shift := e - t.perShift
	j := (n - 1 - 1<<e) >> shift // 0..per-1
	return int((e-t.minShift)<<t.perShift) + j + 1
}

// Exact returns the class whose size is exactly n, or -1.
func (t *Table) Exact(n int) int {
	if n < t.min || n > t.max {
		return -1
	}
	i := t.Index(n)
	if t.sizes[i] != n {
		return -1
	}
	return i
}
