// Package option applies functional options: the one loop every memkit
// constructor runs over its ...Option arguments, so that a nil option is
// reported the same way everywhere.
package option

import "strconv"

// Apply calls each option on c, in order. A nil option stops it with an
// error naming its position, "option 2 of 3 is nil", which the caller
// prefixes with its package ("memkit/slab: "); the options before it have
// been applied.
func Apply[C any, O ~func(*C)](c *C, opts []O) error {
	for i, o := range opts {
		if o == nil {
			return nilError{i + 1, len(opts)}
		}
		o(c)
	}
	return nil
}

type nilError struct{ at, of int }

func (e nilError) Error() string {
	return "option " + strconv.Itoa(e.at) + " of " + strconv.Itoa(e.of) + " is nil"
}
