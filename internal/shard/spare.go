package shard

// TakeSpare removes from x the idle items that have no ticket — items
// added and not yet taken, and items whose ticket a GC dropped while they
// were idle — and appends their keys to dst, for an owner that gives idle
// memory back: an item idle across two GCs lands here (see [Idle]), so an
// owner that calls TakeSpare after every GC returns what stayed unused. The
// items taken are the owner's again, as if never added. It takes x's
// mutex.
func (x *Idle) TakeSpare(dst []uintptr) []uintptr {
	x.mu.Lock()
	dst = append(dst, x.spare...)
	x.spare = x.spare[:0]
	x.mu.Unlock()
	return dst
}
