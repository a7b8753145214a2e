package extent

// ChunkState reports what a Shared's front cache holds at b's first byte:
// "idle" or "out" for a chunk in the front cache, "detached" for a chunk
// whose memory an Allocator serves now, and "" when no chunk of it starts
// there (where segments overlap, the chunk in the front cache counts, then
// a detached one).
func (s *Shared) ChunkState(b []byte) string {
	p := sliceAddr(b)
	s.segMu.Lock()
	defer s.segMu.Unlock()
	state := ""
	for sg := range s.all {
		if p < sg.base || p-sg.base >= sg.span {
			continue
		}
		r := sg.rec(p)
		switch {
		case uintptr(r.ptr) != p:
		case r.state.Load() == chunkFront && r.slot.Out():
			return "out"
		case r.state.Load() == chunkFront:
			return "idle"
		case r.state.Load() == chunkDetached:
			state = "detached"
		}
	}
	return state
}
