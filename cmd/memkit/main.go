// Command memkit runs memkit's side-by-side comparisons with other Go
// allocators and buffer pools.
//
// Usage:
//
//	memkit bench [flags]   run the workloads and print a table (or benchstat text, or JSON)
//	memkit binarytrees [-alloc gc|arena|typed] N
//	                       run the benchmark game's binary-trees program
//	memkit demo [flags]    run an HTTP service on plain Go and on memkit at one
//	                       request rate and compare GC work and latency
//	memkit version         print the build's version, Go version and platform
//
// Every result is printed with the goos, goarch, CPU, Go version and
// GOMAXPROCS it was measured on; `memkit bench --format bench` prints the Go
// benchmark format, so benchstat can compare runs:
//
//	memkit bench --format bench --count 6 > new.txt
//	benchstat -col /impl new.txt
//
// This command is its own module, so that its third-party dependencies stay
// out of github.com/memkit/memkit. From the repository root, run it with
//
//	go -C cmd/memkit run . bench
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
)

func main() {
	err := run(os.Stdout, os.Stderr, os.Args[1:])
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "memkit:", err)
	if errors.As(err, new(usageError)) {
		os.Exit(2)
	}
	os.Exit(1)
}

// usageError is an error in the command line: main exits 2 on it, 1 on any
// other error.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

const usage = `usage: memkit <command> [flags]

commands:
  bench         run the benchmarks comparing memkit with other allocators
  binarytrees   run the benchmark game's binary-trees program with new or an arena
  demo          run one HTTP service on plain Go and on memkit, compare GC work and latency
  version       print the version, Go version and platform

Run 'memkit <command> -h' for a command's flags.
`

// run is the whole command: main only calls it, so tests can run the CLI
// like a library. It writes results to stdout and progress to stderr.
func run(stdout, stderr io.Writer, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command")
	}
	switch cmd, args := args[0], args[1:]; cmd {
	case "bench":
		return runBench(stdout, stderr, args)
	case "binarytrees":
		return runBinaryTrees(stdout, stderr, args)
	case "demo":
		return runDemo(stdout, stderr, args)
	case "version":
		if len(args) > 0 {
			return usagef("version takes no arguments")
		}
		_, err := fmt.Fprintln(stdout, versionLine())
		return err
	case "help", "-h", "-help", "--help":
		_, err := fmt.Fprint(stdout, usage)
		return err
	default:
		return usagef("unknown command %q (want bench, binarytrees, demo or version)", cmd)
	}
}

// versionLine is "memkit VERSION GOVERSION GOOS/GOARCH", like go version.
func versionLine() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("memkit %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
