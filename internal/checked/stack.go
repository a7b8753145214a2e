package checked

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// Stack is a call stack captured without allocating.
type Stack struct {
	pcs [32]uintptr
	n   int
}

// Callers captures the caller's stack, skipping skip frames above the
// function that calls Callers (0: that function's caller).
func Callers(skip int) Stack {
	var s Stack
	s.n = runtime.Callers(skip+2, s.pcs[:])
	return s
}

// Empty reports whether no stack was captured.
func (s *Stack) Empty() bool { return s.n == 0 }

// String formats the stack as a panic trace does: function, then file:line.
func (s *Stack) String() string {
	if s.n == 0 {
		return "\t(unknown)\n"
	}
	var b strings.Builder
	frames := runtime.CallersFrames(s.pcs[:s.n])
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "\t%s\n\t\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			break
		}
	}
	return b.String()
}

// SkipWithin returns how many frames, counting from its caller up, run
// functions of the package whose import path is pkg
// ("github.com/memkit/memkit/bytepool"): the skip to give [Tracker.Alloc]
// and [Tracker.Free] from that caller so that the recorded stack starts at
// the code that called into the allocator, however deep inside it the
// record is made. Functions of pkg's external test package (pkg_test) are
// not counted. Frames are counted as runtime.Callers counts them, inlined
// ones included. Each call site is symbolized once and remembered, so a
// call costs one runtime.Callers and a map lookup per frame.
func SkipWithin(pkg string) int {
	// An allocator rarely nests more than a few calls: unwind 8 frames,
	// which is cheaper than a whole stack, and more only if need be.
	var pcs [32]uintptr
	for _, depth := range [...]int{8, len(pcs)} {
		n := runtime.Callers(2, pcs[:depth])
		k := 0
		for _, pc := range pcs[:n] {
			in, all := pcWithin(pc, pkg)
			k += in
			if !all {
				return k
			}
		}
		if n < depth {
			return k
		}
	}
	return len(pcs)
}

// pcKey and pcInfo are the cache of pcWithin.
type pcKey struct {
	pc  uintptr
	pkg string
}

type pcInfo struct {
	in  int  // leading (innermost) frames at pc that run functions of pkg
	all bool // whether every frame at pc does
}

var pcCache = struct {
	sync.RWMutex
	m map[pcKey]pcInfo
}{m: make(map[pcKey]pcInfo)}

// pcWithin reports, for the return address pc as runtime.Callers gives it,
// how many of the frames it stands for (more than one where calls were
// inlined), innermost first, run functions of pkg before one that does
// not, and whether all of them do.
func pcWithin(pc uintptr, pkg string) (in int, all bool) {
	key := pcKey{pc, pkg}
	pcCache.RLock()
	info, ok := pcCache.m[key]
	pcCache.RUnlock()
	if ok {
		return info.in, info.all
	}
	info.all = true
	frames := runtime.CallersFrames([]uintptr{pc})
	for {
		f, more := frames.Next()
		if !within(f.Function, pkg) {
			info.all = false
			break
		}
		info.in++
		if !more {
			break
		}
	}
	pcCache.Lock()
	pcCache.m[key] = info
	pcCache.Unlock()
	return info.in, info.all
}

// within reports whether fn, a function name as runtime.Frame gives it,
// belongs to the package pkg: "pkg.F", "pkg.(*T).M", "pkg.F.func1".
func within(fn, pkg string) bool {
	return strings.HasPrefix(fn, pkg) && strings.HasPrefix(fn[len(pkg):], ".")
}
