package bytepool

// Test-only access to internals.

// Decays reports how many decay passes have run.
func (p *Pool) Decays() uint64 { return p.decays.Load() }

// Decay runs one decay pass now, as the GC sentinel does after a cycle.
func (p *Pool) Decay() { p.decay() }

// Shards reports the number of shards.
func (p *Pool) Shards() int { return len(p.shards) }

// RegionSize reports the bytes a Bounded pool reserved, or 0.
func (p *Pool) RegionSize() int {
	if p.region == nil {
		return 0
	}
	return len(p.region.mem)
}
