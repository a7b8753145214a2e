package kv

import (
	"fmt"
	"unsafe"
)

// Check verifies every shard's bookkeeping against its segments and index:
// for tests and the fuzz target.
func (m *Map) Check() error {
	for k := range m.shards {
		s := &m.shards[k]
		s.mu.RLock()
		err := s.check()
		s.mu.RUnlock()
		if err != nil {
			return fmt.Errorf("shard %d: %w", k, err)
		}
	}
	return nil
}

func (s *shard) check() error {
	if s.closed {
		return nil
	}
	used, dead, live, entries, slack := 0, 0, 0, 0, 0
	for num := 1; num < len(s.segs); num++ {
		c := &s.segs[num]
		if c.mem == nil {
			continue
		}
		segDead := 0
		for r := 0; r < c.used; {
			hdr := header(c.mem, r)
			span := hdrSpan(hdr)
			if hdr&deadFlag != 0 {
				segDead += span
			} else {
				live += span
				entries++
				i := s.slotAt(uint32(num), r) // loops forever if missing: bounded below
				_ = i
			}
			r += span
		}
		if c.large {
			continue
		}
		if segDead != c.dead {
			return fmt.Errorf("segment %d: %d dead bytes counted, %d found", num, c.dead, segDead)
		}
		if c.touched < c.used || c.touched > len(c.mem) {
			return fmt.Errorf("segment %d: %d bytes touched, %d used of %d", num, c.touched, c.used, len(c.mem))
		}
		used += c.used
		dead += segDead
		slack += c.touched - c.used
	}
	slots := 0
	for _, v := range s.tab {
		if v != 0 {
			slots++
		}
	}
	switch {
	case used != s.used || dead != s.dead || live != s.live:
		return fmt.Errorf("used/dead/live %d/%d/%d counted, %d/%d/%d found", s.used, s.dead, s.live, used, dead, live)
	case slack != s.slack:
		return fmt.Errorf("slack %d counted, %d found", s.slack, slack)
	case slots != entries || int64(slots) != s.count.Load():
		return fmt.Errorf("%d slots, %d live entries, count %d", slots, entries, s.count.Load())
	}
	return nil
}

// SetRegionsAfter sets the bytes of segments a Map maps before it carves them
// from regions, for the tests; it returns the old value.
func SetRegionsAfter(n int) int {
	old := regionsAfter
	regionsAfter = n
	return old
}

// Regions returns the regions m has mapped.
func (m *Map) Regions() int {
	m.regions.mu.Lock()
	defer m.regions.mu.Unlock()
	n := 0
	for _, g := range m.regions.list {
		if g.mem != nil {
			n++
		}
	}
	return n
}

// Spare waits until no spare region is being prepared and returns the
// address of m's spare region, 0 for none.
func (m *Map) Spare() uintptr {
	r := &m.regions
	r.mu.Lock()
	done := r.preparing
	r.mu.Unlock()
	if done != nil {
		<-done
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spare == nil {
		return 0
	}
	return uintptr(unsafe.Pointer(&r.spare[0]))
}

// RegionAt returns the address of m's region numbered num (from 1), 0 for
// none.
func (m *Map) RegionAt(num int) uintptr {
	r := &m.regions
	r.mu.Lock()
	defer r.mu.Unlock()
	if num > len(r.list) || r.list[num-1].mem == nil {
		return 0
	}
	return uintptr(unsafe.Pointer(&r.list[num-1].mem[0]))
}

// Sweeping returns the number of m's shards with a compaction pass under
// way.
func (m *Map) Sweeping() int {
	n := 0
	for k := range m.shards {
		s := &m.shards[k]
		s.mu.RLock()
		if s.sweep != 0 {
			n++
		}
		s.mu.RUnlock()
	}
	return n
}

// CompactStep is the bytes of entries one step of compaction reads.
const CompactStep = compactStep
