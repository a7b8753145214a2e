package memtest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// SoakFlag is -soak, the time TestSoak runs each allocator for:
//
//	go test -run TestSoak -soak 10m ./...
//
// Without it TestSoak skips. Every package's test binary defines it (each
// imports memtest), so the flag may be given to ./... as a whole.
var SoakFlag = flag.Duration("soak", 0, "run TestSoak for this `duration` per allocator (0: skip)")

// SoakStep is one random operation of a soak worker. It returns an error
// when the allocator breaks the worker's model.
type SoakStep func(worker int, rng *rand.Rand) error

// Soak runs step from workers goroutines until -soak has passed, stopping
// at the first error, and checks that the process's resident memory is flat
// over the second half of the run: its peak there is at most 10% (plus
// 8 MiB) above its value at the half-way point. It skips t without -soak.
// The caller checks the allocator's end state (in-use bytes back to zero,
// reserved under budget) after Soak returns.
func Soak(t *testing.T, workers int, step SoakStep) {
	t.Helper()
	d := *SoakFlag
	if d <= 0 {
		t.Skip("soak test: run with -soak 10m")
	}
	var (
		wg       sync.WaitGroup
		stop     = make(chan struct{})
		errOnce  sync.Once
		firstErr error
		steps    = make([]uint64, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for {
				select {
				case <-stop:
					return
				default:
				}
				for range 64 {
					if err := step(w, rng); err != nil {
						errOnce.Do(func() {
							firstErr = fmt.Errorf("worker %d, step %d: %w", w, steps[w], err)
							close(stop)
						})
						return
					}
					steps[w]++
				}
			}
		}()
	}
	start := time.Now()
	var rss []uint64 // one sample a second
	tick := time.NewTicker(time.Second)
loop:
	for time.Since(start) < d {
		select {
		case <-stop:
			break loop
		case <-tick.C:
			if r, ok := RSS(); ok {
				rss = append(rss, r)
			}
		}
	}
	tick.Stop()
	errOnce.Do(func() { close(stop) })
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	var total uint64
	for _, n := range steps {
		total += n
	}
	t.Logf("soak: %d steps by %d workers in %v", total, workers, time.Since(start).Round(time.Second))
	if err := FlatSecondHalf(rss); err != nil {
		t.Error(err)
	}
}

// FlatSecondHalf checks RSS samples, taken at a steady rate, for growth in
// the second half of a run. RSS swings with every GC cycle (the heap goal
// moves with the live heap), so no single sample is a baseline; the check
// is on the run's envelope and trend instead:
//
//   - the second half's peak is at most 10% plus 8 MiB above the first
//     half's peak (no new high-water mark), and
//   - the median of the last quarter is at most 10% plus 4 MiB above the
//     median of the third quarter (no upward trend, which a leak too slow to
//     make a new peak still shows).
func FlatSecondHalf(rss []uint64) error {
	if len(rss) < 4 {
		return nil
	}
	h := len(rss) / 2
	first, second := rss[:h], rss[h:]
	q3, q4 := second[:len(second)/2], second[len(second)/2:]
	if p1, p2 := slices.Max(first), slices.Max(second); p2 > p1+p1/10+8<<20 {
		return fmt.Errorf("soak: RSS grew in the second half: peak %d MiB in the first half, %d MiB in the second (samples: %v)",
			p1>>20, p2>>20, rss)
	}
	if m3, m4 := median(q3), median(q4); m4 > m3+m3/10+4<<20 {
		return fmt.Errorf("soak: RSS grew in the second half: median %d MiB in the third quarter, %d MiB in the last (samples: %v)",
			m3>>20, m4>>20, rss)
	}
	return nil
}

// median returns the median of s (the upper one of an even count); s is not
// modified.
func median(s []uint64) uint64 {
	c := slices.Clone(s)
	slices.Sort(c)
	return c[len(c)/2]
}

// RSS returns the process's resident set size in bytes, read from
// /proc/self/statm; ok is false where there is no such file.
func RSS() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * uint64(os.Getpagesize()), true
}
