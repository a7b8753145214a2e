package checked

import "fmt"

// Quarantine bounds. A tracker holds freed blocks back from reuse until
// more than QuarantineBytes bytes or QuarantineBlocks blocks wait, so a
// second free of a block, or a write into it, is seen before the memory has
// a new owner.
const (
	QuarantineBytes  = 4 << 20
	QuarantineBlocks = 4096
)

// held is one block waiting in a tracker's quarantine.
type held struct {
	rec     *Record
	mem     []byte
	release func()
}

// Hold keeps a block that op just freed out of reuse. It fills mem, the
// block's bytes, with [PoisonByte] and queues the block; once the queue
// holds more than [QuarantineBytes] bytes or [QuarantineBlocks] blocks, the
// oldest blocks leave it: each one's poison is verified (a changed byte
// panics with a [UseAfterFree] report naming its stacks, made by op) and its
// release function really frees it.
//
// release runs without the tracker's lock, on the goroutine of a later Hold
// or [Tracker.Flush] of the same tracker, so the caller must not hold a lock
// that release takes. rec is the record [Tracker.Free] returned.
func (t *Tracker) Hold(op string, rec *Record, mem []byte, release func()) {
	Fill(mem, PoisonByte)
	t.mu.Lock()
	t.held = append(t.held, held{rec: rec, mem: mem, release: release})
	t.heldBytes += len(mem)
	var out []held
	for len(t.held) > QuarantineBlocks || (t.heldBytes > QuarantineBytes && len(t.held) > 1) {
		out = append(out, t.popHeld())
	}
	t.mu.Unlock()
	t.leave(op, out)
}

// Flush checks and releases every block in the quarantine, for an
// allocator's Reset, Close or Trim.
func (t *Tracker) Flush(op string) {
	t.mu.Lock()
	out := make([]held, 0, len(t.held))
	for len(t.held) > 0 {
		out = append(out, t.popHeld())
	}
	t.mu.Unlock()
	t.leave(op, out)
}

// CheckHeld verifies the poison of every block in the quarantine and
// returns the report of the first one written to after its free, or nil.
// The block stays held.
func (t *Tracker) CheckHeld() *Misuse {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, h := range t.held {
		if m := t.poisoned("memkit.Leaks", h); m != nil {
			return m
		}
	}
	return nil
}

// Held reports how many blocks and bytes wait in the quarantine.
func (t *Tracker) Held() (blocks, bytes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held), t.heldBytes
}

// popHeld takes the oldest held block off the queue. t.mu must be held.
func (t *Tracker) popHeld() held {
	h := t.held[0]
	t.held[0] = held{}
	t.held = t.held[1:]
	if len(t.held) == 0 {
		t.held = nil // let the backing array go rather than creep forward
	}
	t.heldBytes -= len(h.mem)
	return h
}

// leave verifies and releases blocks taken off the queue, oldest first. A
// block whose poison was touched is not released: it panics with the report.
func (t *Tracker) leave(op string, out []held) {
	for i, h := range out {
		if m := t.poisoned(op, h); m != nil {
			// Release the rest so the allocator's state stays whole for a
			// caller that recovers.
			for _, r := range out[i+1:] {
				r.release()
			}
			panic(m)
		}
		h.release()
	}
}

// poisoned returns a report if h's poison was changed, or nil.
func (t *Tracker) poisoned(op string, h held) *Misuse {
	i := IndexNot(h.mem, PoisonByte)
	if i < 0 {
		return nil
	}
	var addr uintptr
	if h.rec != nil {
		addr = h.rec.Addr
	}
	return t.Report(op, UseAfterFree, addr, h.rec,
		fmt.Sprintf("byte %d of the freed block is %#02x, not the poison %#02x", i, h.mem[i], PoisonByte))
}
