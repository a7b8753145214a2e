package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// runQueueWait returns how long the process's threads have waited on a
// run queue (ready to run while another thread held their CPU), summed
// over its live threads: the second field of each thread's
// /proc/self/task/*/schedstat. It reports false where that cannot be read.
func runQueueWait() (time.Duration, bool) {
	files, err := filepath.Glob("/proc/self/task/*/schedstat")
	if err != nil || len(files) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited
		}
		fields := bytes.Fields(b)
		if len(fields) < 2 {
			return 0, false
		}
		ns, err := strconv.ParseInt(string(fields[1]), 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, true
}
