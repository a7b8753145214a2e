//go:build memkitdebug

package ringbuf

// slotTag is what a Slot carries for the checked build: whether Peek lent
// it, so that a hand-back to the wrong operation is told from a second
// one.
type slotTag struct{ peek bool }

func (t *slotTag) setPeek()    { t.peek = true }
func (t slotTag) isPeek() bool { return t.peek }
