package gomem

// RecyclableMemory is a Memory whose buffers come from an allocator and go
// back to it all at once with Recycle: gomem's RecyclableMemory (a media
// frame built from pieces, released when the frame is done).
//
// It is not safe for concurrent use. Create it with NewRecyclableMemory.
// NextN costs a Malloc and an append.
type RecyclableMemory struct {
	allocator *ScalableMemoryAllocator
	Memory
	recycleIndexes []int
}

// NewRecyclableMemory returns an empty RecyclableMemory over allocator.
func NewRecyclableMemory(allocator *ScalableMemoryAllocator) RecyclableMemory {
	return RecyclableMemory{allocator: allocator}
}

// InitRecycleIndexes makes Recycle free only the buffers added by NextN and
// AddRecycleBytes from now on (max is a capacity hint), so that buffers
// pushed from elsewhere are left to their owner.
func (r *RecyclableMemory) InitRecycleIndexes(max int) {
	if r.recycleIndexes == nil {
		r.recycleIndexes = make([]int, 0, max)
	}
}

// GetAllocator returns the allocator.
func (r *RecyclableMemory) GetAllocator() *ScalableMemoryAllocator { return r.allocator }

// SetAllocator sets the allocator.
func (r *RecyclableMemory) SetAllocator(a *ScalableMemoryAllocator) { r.allocator = a }

// NextN allocates size bytes, pushes them and returns them; they are valid
// until Recycle.
func (r *RecyclableMemory) NextN(size int) []byte {
	buf := r.allocator.Malloc(size)
	r.AddRecycleBytes(buf)
	return buf
}

// AddRecycleBytes pushes b, memory from the same allocator, so that Recycle
// frees it.
func (r *RecyclableMemory) AddRecycleBytes(b []byte) {
	if r.recycleIndexes != nil {
		r.recycleIndexes = append(r.recycleIndexes, r.Count())
	}
	r.PushOne(b)
}

// Recycle frees the buffers (all, or those of NextN and AddRecycleBytes
// after InitRecycleIndexes) and empties the Memory. Freeing a buffer twice
// panics with "memkit/extent: double free".
func (r *RecyclableMemory) Recycle() {
	if r.recycleIndexes != nil {
		for _, i := range r.recycleIndexes {
			r.allocator.Free(r.Buffers[i])
		}
		r.recycleIndexes = r.recycleIndexes[:0]
	} else {
		for _, b := range r.Buffers {
			r.allocator.Free(b)
		}
	}
	r.Reset()
}
