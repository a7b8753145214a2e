//go:build !linux

package main

import "time"

// runQueueWait reports false: only Linux tells a process how long its
// threads waited on a run queue.
func runQueueWait() (time.Duration, bool) { return 0, false }
