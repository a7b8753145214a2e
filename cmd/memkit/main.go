// Command memkit runs memkit's side-by-side comparisons with other Go
// allocators and buffer pools.
//
// Usage:
//
//	memkit bench [flags]   run the workloads and print a table (or benchstat text, or JSON)
//	memkit bench --list    name the workloads and what each measures
//	memkit binarytrees [-alloc gc|arena|typed] N
//	                       run the benchmark game's binary-trees program
//	memkit demo [flags]    run a key-value HTTP service on a careful standard-
//	                       library map, fastcache and kv.Map, each in its own
//	                       process, and compare RSS, CPU, GC work and latency
//	memkit demo ingest     the telemetry ingest service naive, on the standard
//	                       library with care, and on memkit (they tie)
//	memkit heap [flags]    the large-heap comparison of byte maps, one process
//	                       per map, at GOGC=100 and under GOMEMLIMIT
//	memkit help [command]  print the commands, or a command's flags
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
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"golang.org/x/term"
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

// parseFlags parses the flags of `memkit <cmd>`. On -h it prints usage and
// the flags' defaults to stdout and returns flag.ErrHelp; on a flag error
// it returns a usageError that says where to find the flags.
func parseFlags(fs *flag.FlagSet, stdout io.Writer, usage string, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return err
	}
	return usagef("%s: %v (run '%s -h' for its flags)", strings.TrimPrefix(fs.Name(), "memkit "), err, fs.Name())
}

// isTerminal reports whether w is a terminal, where a progress bar may
// redraw itself; piped or redirected, it would write every redraw. Tests
// replace it.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

const usage = `usage: memkit <command> [flags]

commands:
  bench         run the benchmarks comparing memkit with other allocators
                (memkit bench --list names the workloads)
  binarytrees   run the benchmark game's binary-trees program with new or an arena
  demo          run a key-value HTTP service on a careful standard-library map,
                fastcache and kv.Map; compare RSS, CPU, GC work and latency
                (memkit demo ingest: the telemetry service, where careful code ties)
  heap          fill byte maps with millions of entries, one process each, and
                compare RSS, CPU per operation, GC cost, latency and lost keys
  help          print this, or with a command's name its flags
  version       print the version, Go version and platform

Run 'memkit help <command>' or 'memkit <command> -h' for a command's flags.
`

// commands are the command names run knows.
var commands = []string{"bench", "binarytrees", "demo", "heap", "help", "version"}

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
	case "heap":
		return runHeap(stdout, stderr, args)
	case heapChildCmd: // hidden: one store's process of memkit heap
		return runHeapChild(stdout, args)
	case kvServeCmd: // hidden: one service's process of memkit demo
		return runKVServe(stdout, args)
	case "version":
		if len(args) > 0 {
			return usagef("version takes no arguments")
		}
		_, err := fmt.Fprintln(stdout, versionLine())
		return err
	case "help", "-h", "-help", "--help":
		switch {
		case len(args) == 0:
			_, err := fmt.Fprint(stdout, usage)
			return err
		case len(args) > 1 || !slices.Contains(commands, args[0]):
			return usagef("help: want one of %s, got %q", strings.Join(commands, ", "), strings.Join(args, " "))
		case args[0] == "help" || args[0] == "version":
			_, err := fmt.Fprint(stdout, usage)
			return err
		}
		return run(stdout, stderr, []string{args[0], "-h"})
	default:
		return usagef("unknown command %q (want %s; run 'memkit help')", cmd, strings.Join(commands, ", "))
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
