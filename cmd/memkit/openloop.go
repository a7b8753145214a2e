package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// This file is what the demo and `memkit heap` share to measure a service
// honestly: an open-loop schedule, the child processes each variant runs
// in, and the resident set size of a process.

// clock is the time source of a schedule; tests drive a fake one.
type clock interface {
	Now() time.Time
	Sleep(d time.Duration)
}

// realClock sleeps on the runtime's timers. On a scheduler with nothing
// else to run they wake up to a millisecond late (the runtime waits in
// epoll with millisecond resolution): that lateness is in every latency
// measured, the same for every variant, and sets a floor near 1ms under
// the percentiles. Each wake-up costs the process 2.5-5µs (the timer,
// readying the goroutine, an idle thread woken by futex to look for work
// and put back to sleep): a load generator whose own process's CPU is
// measured sleeps on a tick (schedule.withTick), not once per operation.
// nanosleepClock is precise but costs the process about 7µs of CPU per
// sleep here, more than a map's Get.
type realClock struct{}

func (realClock) Now() time.Time        { return time.Now() }
func (realClock) Sleep(d time.Duration) { time.Sleep(d) }

// schedule is one sender's open-loop timetable: operation k is due at
// first + k×interval, whether or not operation k-1 has finished, until
// end. A sender that falls behind sends at once, and the time it was late
// counts in the operation's latency, which is measured from the due time:
// a slow service cannot slow the schedule down and hide its stalls
// (coordinated omission).
//
// With a tick, a sender with nothing due sleeps until the next of its
// ticks (tickAt + m×tick) instead of until the next due time, and sends
// every operation due by then when it wakes: one wake-up per tick instead
// of one per operation, each operation's latency still from its own due
// time (it includes the wait for the tick). A wake-up costs the process
// 2.5-5µs of scheduler and futex work here, more than a map's Get: with a
// sleep per operation, the senders' scheduling weighs in the CPU measured.
type schedule struct {
	clk      clock
	next     time.Time
	interval time.Duration
	end      time.Time
	// giveUp is when a sender that is still behind stops: what was due
	// by end and not sent by then is counted in missed.
	giveUp time.Time
	missed uint64
	// tick, when positive, is the sender's wake-up period, its ticks at
	// tickAt + m×tick for every integer m.
	tick   time.Duration
	tickAt time.Time
	// sleeps counts the sender's sleeps: its wake-ups.
	sleeps uint64
}

// newSchedule is a timetable of ops spaced interval apart from first to end;
// a sender still behind at end + grace gives up. It sleeps until each
// operation's due time; withTick makes it wake on a tick instead.
func newSchedule(clk clock, first time.Time, interval time.Duration, end time.Time, grace time.Duration) *schedule {
	return &schedule{clk: clk, next: first, interval: interval, end: end, giveUp: end.Add(grace)}
}

// withTick makes s sleep until its next tick, at tickAt + m×tick, when
// nothing is due, and returns s; tick 0 keeps a sleep per operation.
func (s *schedule) withTick(tick time.Duration, tickAt time.Time) *schedule {
	s.tick, s.tickAt = tick, tickAt
	return s
}

// wait blocks until the next operation is due (with a tick: until the
// first tick at or after it) and returns its due time. It returns ok ==
// false when the timetable is over: the next due time is at or after end,
// or the sender is still behind at giveUp (the operations it did not send
// are then added to missed).
func (s *schedule) wait() (due time.Time, ok bool) {
	if !s.next.Before(s.end) {
		return time.Time{}, false
	}
	now := s.clk.Now()
	if !now.Before(s.giveUp) {
		s.missed += uint64((s.end.Sub(s.next)-1)/s.interval) + 1
		s.next = s.end
		return time.Time{}, false
	}
	if wait := s.next.Sub(now); wait > 0 {
		if s.tick > 0 {
			wait = s.nextTick(s.next).Sub(now)
		}
		s.sleeps++
		s.clk.Sleep(wait)
	}
	due = s.next
	s.next = s.next.Add(s.interval)
	return due, true
}

// nextTick returns the first of s's ticks at or after t.
func (s *schedule) nextTick(t time.Time) time.Time {
	d := t.Sub(s.tickAt)
	m := d / s.tick
	if d%s.tick > 0 {
		m++ // Go's division truncates towards zero: round up only above
	}
	return s.tickAt.Add(m * s.tick)
}

// rateShortfall returns a warning when achieved is under 95% of the target
// rate, or some operations were never sent, and "" otherwise: percentiles
// of a run that did not reach its rate describe a lighter load.
func rateShortfall(who string, achieved float64, target int, missed uint64) string {
	if achieved >= 0.95*float64(target) && missed == 0 {
		return ""
	}
	w := fmt.Sprintf("WARNING: %s reached %.0f of %d operations/s", who, achieved, target)
	if missed > 0 {
		w += fmt.Sprintf(" and left %d scheduled operations unsent", missed)
	}
	return w + ": it could not keep the rate, its latencies include the backlog"
}

// childEnv names the variable that marks a child process of memkit; a test
// binary's TestMain runs the command line as memkit's main would.
const childEnv = "MEMKIT_CHILD"

// childCommand is the command that re-runs this executable with args (a
// hidden command) and env added to the environment, GOGC and GOMEMLIMIT
// taken only from env.
func childCommand(env []string, args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, childEnv+"=1"), env...)
	return cmd, nil
}

// runChild runs childCommand(env, args...) to its end and returns its
// standard output. Its standard error goes to stderr.
func runChild(stderr io.Writer, env []string, args ...string) ([]byte, error) {
	cmd, err := childCommand(env, args...)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %v: %w", args[0], env, err)
	}
	return out.Bytes(), nil
}

// readRSS returns the process's resident set size now and its peak (VmRSS
// and VmHWM of /proc/self/status), in bytes; ok is false where there is no
// /proc.
func readRSS() (now, peak uint64, ok bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, val, _ := bytes.Cut(sc.Bytes(), []byte(":"))
		var dst *uint64
		switch string(name) {
		case "VmRSS":
			dst = &now
		case "VmHWM":
			dst = &peak
		default:
			continue
		}
		kb, _ := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(val), []byte(" kB"))), 10, 64)
		*dst = kb << 10
	}
	return now, peak, now > 0
}
