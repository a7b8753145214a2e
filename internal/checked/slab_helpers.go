package checked

import (
	"encoding/binary"
	"runtime"
	"strings"
)

// Helpers added for slab, ringbuf and arena.

// TrimPkg returns s without its innermost frames that belong to the
// package with import path pkg (its tests, pkg_test, excepted), so that a
// report starts at the caller of the allocator rather than somewhere inside
// it, however deep inside it the stack was captured. A stack made only of
// such frames is returned whole.
func TrimPkg(s Stack, pkg string) Stack {
	drop := 0
	for drop < s.n && inPkg(outermost(s.pcs[drop]), pkg) {
		drop++
	}
	if drop == 0 || drop == s.n {
		return s
	}
	var t Stack
	t.n = copy(t.pcs[:], s.pcs[drop:s.n])
	return t
}

// outermost returns the function that the code at return address pc
// belongs to: of the calls inlined there, the outermost.
func outermost(pc uintptr) string {
	frames := runtime.CallersFrames([]uintptr{pc})
	var fn string
	for {
		f, more := frames.Next()
		fn = f.Function
		if !more {
			return fn
		}
	}
}

// inPkg reports whether function fn ("path/pkg.(*T).M", "path/pkg.f.func1")
// is in package pkg.
func inPkg(fn, pkg string) bool {
	rest, ok := strings.CutPrefix(fn, pkg)
	return ok && strings.HasPrefix(rest, ".")
}

// IndexNot is [FirstNot] eight bytes at a time: the index of the first byte
// of b that is not v, or -1. Poison and guard checks of whole chunks use
// it.
func IndexNot(b []byte, v byte) int {
	w := uint64(v) * 0x0101010101010101
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != w {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] != v {
			return i
		}
	}
	return -1
}
