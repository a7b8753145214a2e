package memkit

import "github.com/memkit/memkit/stats"

// The statistics vocabulary is defined in package [stats] and named here.
// Allocators import that leaf package rather than this one, so a program that
// only allocates does not link net/http and expvar, which this package needs
// for [Publish] and [Handler].

// Stats is a point-in-time snapshot of an allocator's memory and activity;
// see [stats.Stats].
type Stats = stats.Stats

// ClassStats is one size class's row of a [Stats] snapshot; see
// [stats.ClassStats].
type ClassStats = stats.ClassStats

// StatsSource is implemented by every memkit allocator; see
// [stats.StatsSource].
type StatsSource = stats.StatsSource
