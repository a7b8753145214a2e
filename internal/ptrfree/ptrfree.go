// Package ptrfree decides whether a Go type holds Go pointers: the one check
// behind every memkit allocator whose memory the GC does not scan (slab
// memory, ring slots, off-heap memory) and behind arena's choice of chunks
// the GC scans or not.
//
// A type is pointer-free when no part of it, at any depth, is a pointer,
// unsafe.Pointer, string, slice, map, channel, func or interface. Each
// verdict is computed once per type by reflection and cached: a later
// check of the same type costs an atomic load and a compare, and never
// allocates.
package ptrfree

import (
	"reflect"
	"sync"
	"sync/atomic"
)

// Error reports a type that holds a Go pointer, naming the first part that
// does.
type Error struct {
	Pkg  string // the memkit package that refused the type: "slab"
	Path string // where the pointer is: "Person2.Name"
	What string // what it is: "a string"
}

// Error returns "memkit/<Pkg>: <Path> is <What>: Go pointers cannot live
// in <Pkg> memory".
func (e *Error) Error() string {
	return "memkit/" + e.Pkg + ": " + e.Path + " is " + e.What + ": Go pointers cannot live in " + e.Pkg + " memory"
}

// Check returns nil if values of type T hold no Go pointer, or an *Error
// naming the first part that does, reported by the memkit package pkg
// ("ringbuf"): "memkit/ringbuf: Person2.Name is a string: Go pointers
// cannot live in ringbuf memory".
func Check[T any](pkg string) error {
	if path, what := Find(reflect.TypeFor[T]()); what != "" {
		return &Error{Pkg: pkg, Path: path, What: what}
	}
	return nil
}

// MustCheck is [Check] that panics with the error's message (a string)
// instead of returning it.
func MustCheck[T any](pkg string) {
	if path, what := Find(reflect.TypeFor[T]()); what != "" {
		panic((&Error{Pkg: pkg, Path: path, What: what}).Error())
	}
}

// HasPointers reports whether a value of type t holds any Go pointer.
func HasPointers(t reflect.Type) bool {
	_, what := Find(t)
	return what != ""
}

// Find returns the path to the first part of t that holds a Go pointer,
// starting with [Name] of t ("Person2.Name", "[2]string[0]"), and what it is
// ("a string"); what is "" if t is pointer-free. The verdict is cached.
func Find(t reflect.Type) (path, what string) {
	h := reflect.ValueOf(t).Pointer() // t is a *reflect.rtype
	entry := &recent[(h>>4^h>>10)&(uintptr(len(recent))-1)]
	if v := entry.Load(); v != nil && v.t == t {
		return v.path, v.what
	}
	var v *verdict
	if got, ok := verdicts.Load(t); ok {
		v = got.(*verdict)
	} else {
		v = &verdict{t: t}
		v.path, v.what = find(t, Name(t))
		verdicts.Store(t, v)
	}
	entry.Store(v)
	return v.path, v.what
}

// Name is the name of t without its package path, or its literal for an
// unnamed type: how a path of [Find] starts.
func Name(t reflect.Type) string {
	if t.Name() != "" {
		return t.Name()
	}
	return t.String()
}

// verdict is the cached result of Find for one type.
type verdict struct {
	t          reflect.Type
	path, what string
}

// verdicts caches Find per type: reflect.Type → *verdict.
var verdicts sync.Map

// recent is a direct-mapped cache in front of verdicts, indexed by the
// address of the type descriptor, so that a check of a type seen before
// costs an atomic load and a compare instead of a sync.Map lookup.
var recent [64]atomic.Pointer[verdict]

// find is Find without the cache.
func find(t reflect.Type, path string) (string, string) {
	switch t.Kind() {
	case reflect.Pointer:
		return path, "a pointer"
	case reflect.UnsafePointer:
		return path, "an unsafe.Pointer"
	case reflect.String:
		return path, "a string"
	case reflect.Slice:
		return path, "a slice"
	case reflect.Map:
		return path, "a map"
	case reflect.Chan:
		return path, "a channel"
	case reflect.Func:
		return path, "a func"
	case reflect.Interface:
		return path, "an interface"
	case reflect.Array:
		if t.Len() == 0 {
			return "", ""
		}
		return find(t.Elem(), path+"[0]")
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if p, what := find(f.Type, path+"."+f.Name); what != "" {
				return p, what
			}
		}
	}
	return "", ""
}
