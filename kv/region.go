package kv

import (
	"sync"

	"github.com/memkit/memkit/offheap"
)

// Where segments come from. A Map's first regionsAfter bytes of normal
// segments are mappings of their own. Past that, segments are carved from
// regions of regionSize bytes, regionSegs to a region: one mmap for eight
// segments, and, with WithHugePages, one transparent huge page
// (offheap.AllocHuge).
const (
	regionSize = 2 << 20
	regionSegs = regionSize / segSize
)

// regionsAfter is a variable for the tests, which carve from regions at
// once.
var regionsAfter = 64 << 20

// Huge pages are an option (WithHugePages, whose doc gives the measured
// trade: a Get's TLB miss against a whole-process stall at each huge
// page's first write on the VM of docs/performance.md), not the default.
// With them a Map keeps one spare region, mapped and written ahead of need
// by a goroutine of its own, so that no Set pays the fault inside its
// shard's lock; the price is one region (2 MiB) resident before it is
// used, and the unwritten end of each shard's current segment, resident
// with its huge page. Regions of 4 KiB pages need no spare: a Set's append
// faults one small page at a time.

// regions is a Map's set of regions and its count of normal
// segment bytes; the shards take segments from it under its mutex, once per
// segment's worth of entries.
type regions struct {
	huge   bool // WithHugePages: regions advised for huge pages, with a spare
	mu     sync.Mutex
	list   []region // by number - 1; a freed region's mem is nil
	free   []int    // numbers of regions with a free slot
	normal int      // bytes of normal segments mapped, carved or not

	spare     []byte        // a region mapped and touched ahead of need, or nil
	preparing chan struct{} // while a goroutine prepares the spare: closed when it is done
	closed    bool
}

// region is one huge-page mapping holding regionSegs segments.
type region struct {
	mem  []byte
	used uint32 // bit i: slot i holds a segment
}

// segment returns the memory of a new normal segment of segSize bytes and
// the number of the region it was carved from, 0 for a mapping of its own.
// The caller has charged the budget.
func (r *regions) segment(heap *offheap.Allocator) ([]byte, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.normal < regionsAfter || !offheap.MmapAvailable {
		mem, err := heap.Alloc(segSize)
		if err == nil {
			r.normal += segSize
		}
		return mem, 0, err
	}
	if len(r.free) == 0 {
		mem, err := r.take(heap)
		if err != nil {
			return nil, 0, err
		}
		num := len(r.list) + 1
		for i := range r.list { // reuse the number of a freed region
			if r.list[i].mem == nil {
				num = i + 1
				break
			}
		}
		if num > len(r.list) {
			r.list = append(r.list, region{})
		}
		r.list[num-1] = region{mem: mem}
		r.free = append(r.free, num)
	}
	num := r.free[len(r.free)-1]
	g := &r.list[num-1]
	slot := 0
	for g.used&(1<<slot) != 0 {
		slot++
	}
	g.used |= 1 << slot
	if g.used == 1<<regionSegs-1 {
		r.free = r.free[:len(r.free)-1]
	}
	r.normal += segSize
	return g.mem[slot*segSize : (slot+1)*segSize : (slot+1)*segSize], num, nil
}

// take returns a new region: with huge pages the spare, if one is ready,
// and it starts preparing the next.
func (r *regions) take(heap *offheap.Allocator) ([]byte, error) {
	if !r.huge {
		return heap.Alloc(regionSize)
	}
	mem := r.spare
	r.spare = nil
	if mem == nil {
		var err error
		if mem, err = heap.AllocHuge(regionSize); err != nil {
			return nil, err
		}
	}
	r.prepare(heap)
	return mem, nil
}

// prepare starts a goroutine that maps and touches the next spare region,
// unless one runs or a spare is ready; the caller holds r.mu. Where the
// OS refuses, there is no spare, and segment maps its region itself.
func (r *regions) prepare(heap *offheap.Allocator) {
	if r.spare != nil || r.preparing != nil || r.closed {
		return
	}
	done := make(chan struct{})
	r.preparing = done
	go func() {
		mem, err := heap.AllocHuge(regionSize)
		if err == nil {
			for i := 0; i < len(mem); i += pageSize { // one write per page: a fault for each, or one for the huge page
				mem[i] = 0
			}
		}
		r.mu.Lock()
		switch {
		case err != nil:
		case r.closed:
			_ = heap.Free(mem) // Close has unmapped the rest; this one was never used
		default:
			r.spare = mem
		}
		r.preparing = nil
		close(done)
		r.mu.Unlock()
	}()
}

// release gives back the normal segment mem, which holds nothing, carved
// from region num (0: a mapping of its own). A carved segment's pages go
// back to the OS (madvise), and its region is unmapped once it holds no
// segment.
func (r *regions) release(heap *offheap.Allocator, mem []byte, num int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.normal -= len(mem)
	if num == 0 {
		return heap.Free(mem)
	}
	g := &r.list[num-1]
	if g.used == 1<<regionSegs-1 {
		r.free = append(r.free, num)
	}
	g.used &^= 1 << r.slotOf(g, mem)
	if g.used != 0 {
		return offheap.Release(mem)
	}
	for i, n := range r.free {
		if n == num {
			r.free = append(r.free[:i], r.free[i+1:]...)
			break
		}
	}
	err := heap.Free(g.mem)
	*g = region{}
	return err
}

// slotOf returns the slot of region g that segment mem is.
func (r *regions) slotOf(g *region, mem []byte) int {
	for i := range regionSegs {
		if &g.mem[i*segSize] == &mem[0] {
			return i
		}
	}
	panic("memkit/kv: internal error: a segment outside its region")
}

// close unmaps every region and the spare, after waiting for a spare being
// prepared; the shards have dropped their segments.
func (r *regions) close(heap *offheap.Allocator) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if done := r.preparing; done != nil {
		r.mu.Unlock()
		<-done
		r.mu.Lock()
	}
	if r.spare != nil {
		err = heap.Free(r.spare)
		r.spare = nil
	}
	for i := range r.list {
		if g := &r.list[i]; g.mem != nil {
			if e := heap.Free(g.mem); e != nil && err == nil {
				err = e
			}
		}
	}
	r.list, r.free, r.normal = nil, nil, 0
	return err
}
