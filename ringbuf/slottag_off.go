//go:build !memkitdebug

package ringbuf

// slotTag is what a Slot carries for the checked build: nothing in a
// release build, where it takes no space.
type slotTag struct{}

func (*slotTag) setPeek()    {}
func (slotTag) isPeek() bool { return false }
