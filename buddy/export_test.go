package buddy

import "github.com/memkit/memkit/internal/checked"

// Test-only access to internals.

// FreeBlocks reports the free blocks on order k's list.
func (a *Allocator) FreeBlocks(k int) int { return int(a.orders[k].nfree) }

// Coalesce merges every free pair now, as a failing Alloc does, after
// giving back the blocks the checked build's quarantine holds.
func (a *Allocator) Coalesce() {
	if checked.Enabled {
		a.releaseHeld()
	}
	a.coalesce()
}

// LazyReserve is how many free blocks an order keeps unmerged.
const LazyReserve = lazyReserve

// Base reports the region's start address.
func (a *Allocator) Base() uintptr { return a.base }
