package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the command line as main does when this test binary is
// started as a child process of memkit heap or the demo (runChild re-runs
// os.Executable, which in a test is the test binary).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := run(os.Stdout, os.Stderr, os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "memkit:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
