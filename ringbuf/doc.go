// Package ringbuf is a bounded first-in, first-out queue of byte records,
// each copied into a fixed-size slot of one region taken at [New], for many
// writers and readers. Pick it over a channel of []byte when the records
// are bytes of bounded size: nothing is allocated per record, a full ring
// follows a [Policy] (reject, overwrite the oldest, or block), records can
// be built and read in place ([Ring.Reserve], [Ring.Peek]), and its
// statistics show depth, drops and rejections. Pick a channel for values
// that hold pointers, for select over several sources, or for close as a
// signal. [Typed] carries values of a pointer-free type.
//
//	r, _ := ringbuf.New(10, 64, ringbuf.WithPolicy(ringbuf.Overwrite))
//	r.Write(rec)       // copies rec into a slot
//	n, ok := r.Read(p) // copies the oldest record out
package ringbuf
