package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeClock is a clock the test moves: Sleep advances it exactly, and work
// advances it by what an operation takes.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time        { return c.now }
func (c *fakeClock) Sleep(d time.Duration) { c.now = c.now.Add(d) }

// TestSchedule_OpenLoop checks that a stall delays the operations behind it
// and shows in their latencies, measured from their due times, instead of
// pushing the schedule back (coordinated omission would report one slow
// operation and nine fast ones); that no operation is skipped; and that a
// sender still behind at give-up time counts what it did not send.
func TestSchedule_OpenLoop(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := &fakeClock{now: t0}
	const iv = time.Millisecond
	s := newSchedule(clk, t0, iv, t0.Add(20*iv), 100*iv)
	var lats []time.Duration
	for k := 0; ; k++ {
		due, ok := s.wait()
		if !ok {
			break
		}
		if want := t0.Add(time.Duration(k) * iv); !due.Equal(want) {
			t.Fatalf("op %d due at %v; want %v", k, due.Sub(t0), want.Sub(t0))
		}
		work := iv / 10
		if k == 5 {
			work = 10 * iv // a stall: ops 6..14 become due meanwhile
		}
		clk.now = clk.now.Add(work)
		lats = append(lats, clk.now.Sub(due))
	}
	if len(lats) != 20 || s.missed != 0 {
		t.Fatalf("%d ops sent, %d missed; want 20 and 0", len(lats), s.missed)
	}
	// Op 6 was due at 6ms and ran from 15ms, when the stall ended.
	if want := 9*iv + iv/10; lats[6] != want {
		t.Errorf("op 6 latency %v; want %v (from its due time)", lats[6], want)
	}
	if lats[4] != iv/10 || lats[19] != iv/10 {
		t.Errorf("latencies before and long after the stall %v, %v; want %v", lats[4], lats[19], iv/10)
	}

	// A sender 50 ops behind at give-up time stops and counts the rest.
	clk.now = t0
	s = newSchedule(clk, t0, iv, t0.Add(100*iv), 10*iv)
	sent := 0
	for {
		if _, ok := s.wait(); !ok {
			break
		}
		sent++
		clk.now = clk.now.Add(2 * iv) // twice too slow
	}
	if uint64(sent)+s.missed != 100 || s.missed == 0 {
		t.Fatalf("sent %d, missed %d; want 100 in all, some missed", sent, s.missed)
	}
	if w := rateShortfall("x", 55, 100, s.missed); !strings.HasPrefix(w, "WARNING: x reached 55 of 100 operations/s and left") {
		t.Errorf("warning %q", w)
	}
	if w := rateShortfall("x", 99, 100, 0); w != "" {
		t.Errorf("a run at 99%% of its rate warned %q", w)
	}
}

// TestSchedule_Tick checks a schedule that wakes on a tick: every
// operation keeps its own due time, is sent at the first of the sender's
// ticks at or after it (after the operations before it in that tick's
// batch), one sleep per tick; an operation due before end is sent even when
// its tick is after end; a stall is caught up without sleeping, and a
// sender still behind at give-up time counts what it did not send.
func TestSchedule_Tick(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const (
		iv   = 80 * time.Microsecond
		tick = time.Millisecond
		work = 500 * time.Nanosecond // a batch of 13 ends before the next op is due
	)
	clk := &fakeClock{now: t0}
	tickAt := t0.Add(tick/4 + 2*tick) // a later tick: the grid runs both ways
	s := newSchedule(clk, t0.Add(20*time.Microsecond), iv, t0.Add(5*tick), tick).withTick(tick, tickAt)
	var batches []int
	lastSent := time.Time{}
	for k := 0; ; k++ {
		due, ok := s.wait()
		if !ok {
			break
		}
		if want := t0.Add(20*time.Microsecond + time.Duration(k)*iv); !due.Equal(want) {
			t.Fatalf("op %d due at %v; want %v", k, due.Sub(t0), want.Sub(t0))
		}
		// Ticks at 0.25, 1.25, ... ms: op k is sent at the first at or
		// after its due time, or when the op before it is done.
		sentAt := t0.Add(tick/4 + (due.Sub(t0)-tick/4+tick-1)/tick*tick)
		if d := lastSent.Add(work); d.After(sentAt) {
			sentAt = d
		}
		if !clk.now.Equal(sentAt) {
			t.Fatalf("op %d (due %v) sent at %v; want %v", k, due.Sub(t0), clk.now.Sub(t0), sentAt.Sub(t0))
		}
		if k == 0 || clk.now.Sub(lastSent) > work {
			batches = append(batches, 0)
		}
		batches[len(batches)-1]++
		lastSent = clk.now
		clk.now = clk.now.Add(work)
	}
	// Ops due at 20+80k µs, k = 0..62, by tick: ≤250µs, ≤1250, ≤2250,
	// ≤3250, ≤4250, and the last 10 (4260..4980µs, before end) at 5250.
	if want := []int{3, 13, 12, 13, 12, 10}; !slices.Equal(batches, want) || s.sleeps != uint64(len(want)) || s.missed != 0 {
		t.Fatalf("ops per tick %v, %d sleeps, %d missed; want %v, %d and 0", batches, s.sleeps, s.missed, want, len(want))
	}

	// A stall past give-up time (end + grace = 6ms): the ops due meanwhile
	// are not slept for, and what is left at give-up time is counted.
	clk.now = t0
	s = newSchedule(clk, t0, iv, t0.Add(5*tick), tick).withTick(tick, t0)
	sent := 0
	for {
		if _, ok := s.wait(); !ok {
			break
		}
		sent++
		if sent == 5 {
			clk.now = clk.now.Add(4 * tick) // ops 5..54 become due
		}
		clk.now = clk.now.Add(50 * time.Microsecond)
	}
	// Op 0 is sent at once, ops 1..4 at the 1ms tick (the one sleep), op
	// 4 stalls 4ms; from 5.2ms, with ops 5..62 all due, one is sent every
	// 50µs without sleeping until give-up at 6ms: ops 5..20.
	if sent != 21 || s.missed != 63-21 || s.sleeps != 1 {
		t.Fatalf("sent %d, missed %d, %d sleeps; want 21, %d and 1", sent, s.missed, s.sleeps, 63-21)
	}
}

// TestSchedule_NextTick checks the grid both sides of tickAt: a time on a
// tick is its own tick; other times round up, before tickAt as after.
func TestSchedule_NextTick(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := (&schedule{}).withTick(time.Millisecond, t0)
	for _, c := range []struct{ at, want time.Duration }{
		{0, 0}, {1, time.Millisecond}, {time.Millisecond, time.Millisecond},
		{time.Millisecond + 1, 2 * time.Millisecond},
		{-1, 0}, {-time.Millisecond, -time.Millisecond}, {-time.Millisecond - 1, -time.Millisecond},
		{-2500 * time.Microsecond, -2 * time.Millisecond},
	} {
		if got := s.nextTick(t0.Add(c.at)).Sub(t0); got != c.want {
			t.Errorf("nextTick(%v) = %v; want %v", c.at, got, c.want)
		}
	}
}

func TestKVValue_Checks(t *testing.T) {
	for id := range uint64(300) {
		gen := uint32(id * 7 % 5)
		v := appendKVValue(nil, id, gen)
		if n := len(v); n != kvValueLen(id, gen) || n < 100 || n > 1100 {
			t.Fatalf("value of %d has %d bytes; want %d in 100..1100", id, n, kvValueLen(id, gen))
		}
		if g, ok := checkKVValue(v, id); !ok || g != gen {
			t.Fatalf("check of a good value: gen %d, %v; want %d", g, ok, gen)
		}
		if _, ok := checkKVValue(v, id+1); ok {
			t.Fatal("a value passed as another key's")
		}
		bad := bytes.Clone(v)
		bad[len(bad)-1] ^= 1
		if _, ok := checkKVValue(bad, id); ok {
			t.Fatal("a value with a flipped last byte passed")
		}
		if _, ok := checkKVValue(v[:len(v)-1], id); ok {
			t.Fatal("a truncated value passed")
		}
	}
}

func TestReadRSS(t *testing.T) {
	now, peak, ok := readRSS()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("no RSS on linux")
		}
		t.Skip("no /proc")
	}
	if now == 0 || peak < now {
		t.Fatalf("RSS %d, peak %d", now, peak)
	}
}

// TestHeap_Small runs memkit heap end to end, small: each store in its own
// child process (this test binary, re-run), in both settings. Every store
// but fastcache must keep every key and every read must return the bytes
// written; every scheduled operation is sent or counted as unsent.
func TestHeap_Small(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes")
	}
	var out, errOut bytes.Buffer
	args := []string{"heap", "--entries", "20000", "--duration", "500ms", "--rate", "2000", "--workers", "2", "--json"}
	if err := run(&out, &errOut, args); err != nil {
		t.Fatalf("heap: %v\n%s", err, errOut.String())
	}
	var rs []heapResult
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rs) != 2*len(heapStores) {
		t.Fatalf("%d results; want %d", len(rs), 2*len(heapStores))
	}
	data := kvDataBytes(20000)
	for _, r := range rs {
		if r.Store != "fastcache" && r.Lost != 0 || r.Corrupt != 0 {
			t.Errorf("%s/%s: %d lost keys, %d corrupt reads", r.Store, r.Setting, r.Lost, r.Corrupt)
		}
		if r.Ops+r.Unsent != 1000 { // 2000/s for 500ms, the two senders' schedules together
			t.Errorf("%s/%s: %d ops sent and %d unsent; want 1000 in all", r.Store, r.Setting, r.Ops, r.Unsent)
		}
		if r.RSS == 0 || r.CPUPerOp <= 0 || r.DataBytes < data*9/10 || r.DataBytes > data*11/10 {
			t.Errorf("%s/%s: RSS %d, CPU/op %v, data %d (filled %d)", r.Store, r.Setting, r.RSS, r.CPUPerOp, r.DataBytes, data)
		}
		if want := int64(0); r.Setting == "memlimit" {
			want = data * 16 / 10
			if r.GoMemLimit != want {
				t.Errorf("%s/%s: GOMEMLIMIT %d; want %d", r.Store, r.Setting, r.GoMemLimit, want)
			}
		} else if r.GoMemLimit != want {
			t.Errorf("%s/%s: GOMEMLIMIT %d; want none", r.Store, r.Setting, r.GoMemLimit)
		}
	}
	// The table prints the targets.
	cfg, err := parseHeapFlags(&out, args[1:])
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	printHeap(&out, cfg, rs)
	for _, want := range []string{"GOMEMLIMIT=", "forced GC CPU, full", "targets (issue 22), kv.Map:", "lost keys = 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestHeap_HarnessStore runs the floor column: one child with no store
// behind the senders (one sender, so that its reads of the generations are
// its own writes), whose every read must still check and every key verify.
func TestHeap_HarnessStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	var out, errOut bytes.Buffer
	args := []string{"heap", "--stores", "harness", "--settings", "gogc", "--entries", "5000", "--duration", "300ms", "--rate", "2000", "--workers", "1", "--json"}
	if err := run(&out, &errOut, args); err != nil {
		t.Fatalf("heap: %v\n%s", err, errOut.String())
	}
	var rs []heapResult
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rs) != 1 || rs[0].Store != "harness" {
		t.Fatalf("results %+v; want one harness column", rs)
	}
	if r := rs[0]; r.Lost != 0 || r.Corrupt != 0 || r.Misses != 0 || r.Ops+r.Unsent != 600 || r.CPUPerOp <= 0 {
		t.Errorf("harness: %d lost, %d corrupt, %d misses, %d ops + %d unsent (want 600), CPU/op %v", r.Lost, r.Corrupt, r.Misses, r.Ops, r.Unsent, r.CPUPerOp)
	}
}

// TestPrintHeapTargets checks the targets of a run of one setting: a
// GOMEMLIMIT-only run still prints its CPU ratio to the map and its RSS.
func TestPrintHeapTargets(t *testing.T) {
	rs := []heapResult{
		{Store: "idmap", Setting: "memlimit", CPUPerOp: 8, DataBytes: 1 << 30, RSS: 3 << 29},
		{Store: "memkit", Setting: "memlimit", CPUPerOp: 3, DataBytes: 1 << 30, RSS: 1 << 30, ForcedGCEmpty: 2, ForcedGCFull: 5},
		{Store: "harness", Setting: "memlimit", CPUPerOp: 1.9, P999: 3100},
	}
	var b bytes.Buffer
	printHeapTargets(&b, rs)
	for _, want := range []string{
		"CPU/op ≤ 0.5× the idmap's, GOMEMLIMIT=1.6× data 0.38 met",
		"RSS ≤ 1.10× data + 64 MiB, memlimit (RSS / bound) 0.86 met",
		"forced GC full − empty within 2 ms, memlimit +3.0ms NOT met",
		"lost keys = 0 0 met",
		"the harness alone (no store), memlimit CPU/op 1.9µs, p99.9 3.1ms",
	} {
		if !strings.Contains(squeeze(b.String()), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "GOGC=100") {
		t.Errorf("targets of a setting that did not run:\n%s", b.String())
	}
}

// TestFindStalls checks what counts as a process stall: late operations
// of every sender with no gap over stallGap between them; one sender late
// alone, or all of them late but far apart, is not one.
func TestFindStalls(t *testing.T) {
	t0 := time.Now()
	ms := func(f float64) time.Time { return t0.Add(time.Duration(f * float64(time.Millisecond))) }
	late := []lateOp{
		// a stall of three senders, out of order: 3 ops
		{ms(100.2), 1}, {ms(100), 0}, {ms(104), 2},
		// sender 0 alone, for long: not a stall
		{ms(500), 0}, {ms(505), 0}, {ms(509), 0},
		// every sender, but two gaps over stallGap: three groups, none a stall
		{ms(900), 0}, {ms(911), 1}, {ms(922), 2},
		// a stall of 5 ops, the gap between them exactly stallGap
		{ms(2000), 2}, {ms(2010), 0}, {ms(2010), 0}, {ms(2011), 1}, {ms(2012), 2},
	}
	n, ops := findStalls(late, 3)
	if n != 2 || ops != 8 {
		t.Errorf("findStalls = %d stalls, %d ops; want 2 stalls, 8 ops", n, ops)
	}
	if n, ops := findStalls(nil, 4); n != 0 || ops != 0 {
		t.Errorf("findStalls(nil) = %d, %d; want 0, 0", n, ops)
	}
}
