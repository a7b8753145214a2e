// Package buffer is for building and reading bytes: a response, a
// request body, a message, a JSON document. Pick it over bytes.Buffer when
// such buffers are made often enough that their garbage shows (a [Buffer]
// from [Get] recycles its header and storage, 0 allocations per use), over
// a sync.Pool of *bytes.Buffer when buffers should size themselves to what
// the program writes and let idle memory go after a burst, and over
// bytepool when you want an io.Writer with bytes.Buffer's methods rather
// than a bare []byte (bytepool is its storage). [FixedPool] is for a fixed
// memory footprint: count buffers of one size reserved up front, checked
// out and closed, never truncating. [JSON] writes correct JSON into a
// Buffer without allocating, and [Slice] and [Reader] read a list of
// segments as one stream without copying (gomem's Memory and
// MemoryReader).
//
//	b := buffer.Get()        // storage from bytepool on the first write
//	j := buffer.NewJSON(b)   // a value, on the stack
//	j.BeginArray()
//	j.Int(1)
//	j.EndArray()
//	w.Write(b.Bytes())
//	b.Free()                 // storage back to bytepool
//
// More on buffers, JSON, slices and readers, misuse, checked build, options,
// budgets, statistics: docs/buffer.md in the repository.
package buffer
