package shard

// NewPooledIdle is NewIdle keeping idle tickets in the sync.Pool in every
// build, the race detector's included, for the stress test.
func NewPooledIdle(slotOf func(key uintptr) *Slot) *Idle { return newIdle(slotOf, false) }
