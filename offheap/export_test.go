package offheap

// Test-only access to internals.

// LiveAt reports whether a live mapping holds the byte at p.
func LiveAt(p uintptr) bool {
	table.mu.Lock()
	defer table.mu.Unlock()
	return containing(p) >= 0
}
