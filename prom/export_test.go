package prom

// NewCollector and WithoutClasses give the tests a collector of one
// allocator, a fake StatsSource among them, without publishing it.
var (
	NewCollector   = newCollector
	WithoutClasses = withoutClasses
)
