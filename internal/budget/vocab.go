package budget

import (
	"errors"
	"strconv"
)

// Options is the budget part of an allocator's configuration: what the
// package's WithBudget and WithBudgetAlert options set. Each package's
// config embeds it, so that the two options mean the same thing and are
// validated the same way everywhere:
//
//   - WithBudget(n): the allocator holds at most n bytes (what it counts is
//     the package's to say); a call that would pass it fails with ErrBudget
//     or takes the fallback its package documents. n must be > 0: leaving
//     the option out is how to say "no limit".
//   - WithBudgetAlert(threshold, fn): fn is called when the bytes held rise
//     to threshold or more and when they fall back below it. threshold must
//     be > 0, fn must not be nil, and with a budget the threshold must not
//     be above it (the alert could never fire).
//
// The zero Options asks for no budget and no alert.
type Options struct {
	limit    int64
	limitSet bool
	alertAt  int64
	alertFn  func(used int64, above bool)
	alertSet bool
}

// SetLimit records WithBudget(n).
func (o *Options) SetLimit(n int64) { o.limit, o.limitSet = n, true }

// SetAlert records WithBudgetAlert(threshold, fn).
func (o *Options) SetAlert(threshold int64, fn func(used int64, above bool)) {
	o.alertAt, o.alertFn, o.alertSet = threshold, fn, true
}

// Limit returns the budget in bytes, 0 when none was set.
func (o *Options) Limit() int64 {
	if !o.limitSet {
		return 0
	}
	return o.limit
}

// HasAlert reports whether WithBudgetAlert was given.
func (o *Options) HasAlert() bool { return o.alertSet }

// Any reports whether either option was given.
func (o *Options) Any() bool { return o.limitSet || o.alertSet }

// Alert returns the threshold and callback WithBudgetAlert set, for the
// allocators that evaluate the alert themselves (a fixed region counts
// bytes in use on its own path).
func (o *Options) Alert() (threshold int64, fn func(used int64, above bool)) {
	return o.alertAt, o.alertFn
}

// Check returns what is wrong with the options, or nil. The message names
// the option and what to do, without a package prefix: the caller adds its
// own ("memkit/slab: ").
func (o *Options) Check() error {
	switch {
	case o.limitSet && o.limit <= 0:
		return errors.New("WithBudget(" + itoa(o.limit) + "): a budget is a number of bytes > 0; leave the option out for no limit")
	case o.alertSet && o.alertAt <= 0:
		return errors.New("WithBudgetAlert(" + itoa(o.alertAt) + ", fn): the threshold must be > 0 bytes")
	case o.alertSet && o.alertFn == nil:
		return errors.New("WithBudgetAlert(" + itoa(o.alertAt) + ", nil): fn is nil; leave the option out for no alert")
	case o.limitSet && o.alertSet && o.alertAt > o.limit:
		return errors.New("WithBudgetAlert(" + itoa(o.alertAt) + ", fn): the threshold is above WithBudget(" + itoa(o.limit) + "), so the alert could never fire")
	}
	return nil
}

// New returns the Budget the options ask for, or nil (unlimited, no
// callback, no cost) when they ask for neither. Call it after Check.
func (o *Options) New() *Budget {
	if !o.Any() {
		return nil
	}
	return New(o.Limit(), o.alertAt, o.alertFn)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Error is the error value of each package's ErrBudget and ErrNoSpace. Its
// text carries the package's prefix; errors.Is matches any package's error
// of the same kind, so that code handling one memkit budget error handles
// them all.
//
//   - ErrBudget: the call would take the allocator past the byte budget set
//     with WithBudget. Nothing changed but the failure count.
//   - ErrNoSpace: the memory the allocator draws from has nothing for the
//     call, with or without a budget: a fixed region (buddy) full or too
//     fragmented to serve it, or a source given with WithMalloc (slab) that
//     returned nothing.
type Error struct {
	msg    string
	budget bool // ErrBudget; otherwise ErrNoSpace
}

// NewErrBudget returns a package's ErrBudget: pkg is the package's name,
// what says what the budget bounds ("byte budget exhausted").
func NewErrBudget(pkg, what string) *Error {
	return &Error{msg: "memkit/" + pkg + ": " + what, budget: true}
}

// NewErrNoSpace returns a package's ErrNoSpace.
func NewErrNoSpace(pkg, what string) *Error {
	return &Error{msg: "memkit/" + pkg + ": " + what}
}

func (e *Error) Error() string { return e.msg }

// Is reports whether target is an Error of the same kind, from any package.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.budget == e.budget
}
