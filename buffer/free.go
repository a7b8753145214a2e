package buffer

import "github.com/memkit/memkit/internal/checked"

// Free returns the buffer's storage to bytepool and, for a Buffer from
// [Pool.Get], the Buffer itself to its Pool, which may keep the storage
// with the idle header for its next Get (see [Pool]); for a [FixedPool]
// checkout, it is [Buffer.Close]. b must not be used afterwards, except for the zero
// value (a Buffer not from Get or Checkout), which is left empty and usable.
//
// Freeing a Buffer from Get or Checkout twice panics with
// "memkit/buffer: double free" when the second Free comes before the
// Buffer is handed out again (a state word, O(1)); after that the header
// serves its new owner and the second Free cannot be told from the
// owner's. Build with memkitdebug to catch every late use.
func (b *Buffer) Free() {
	if checked.Enabled && b.tracked() {
		b.checkFree("Free")
	}
	// The hot path, release's first case, written out here so that Free
	// makes one call fewer: a header from Get keeps its storage while
	// idle. The Free that samples the length for calibration goes the
	// long way. (A header from Get has no FixedPool; Keepable refuses storage
	// over keepMax: see Pool.keeper.)
	if !checked.Enabled && b.hdr && b.owned && b.state == stLive && b.toSample > 1 {
		if p := b.pool; p.keeper.Keepable(b.buf) {
			p.keeper.Keep(b.buf)
			p.keeper.Kept(b.buf, b.sampled)
			b.toSample--
			b.idle(p)
			return
		}
	}
	if b.fp != nil {
		if !checked.Enabled && b.fp.closeFast(b) {
			return
		}
		if b.fp.close(b, "Free") != nil {
			if checked.Enabled {
				b.doubleFree("Free")
			}
			panic(msgDoubleFree)
		}
		return
	}
	if b.state == stFree {
		if checked.Enabled && b.tracked() {
			b.doubleFree("Free")
		}
		panic(msgDoubleFree)
	}
	if checked.Enabled && b.tracked() {
		b.untrack("Free")
	}
	b.release()
}

// Close is [Buffer.Free] that reports a second call instead of panicking:
// it returns [ErrClosed] and changes nothing. It is how a [FixedPool]
// checkout goes back to its pool (io.Closer).
func (b *Buffer) Close() error {
	if checked.Enabled && b.tracked() {
		b.checkFree("Close")
	}
	if b.fp != nil {
		if !checked.Enabled && b.fp.closeFast(b) {
			return nil
		}
		return b.fp.close(b, "Close")
	}
	if b.state == stFree {
		return ErrClosed
	}
	if checked.Enabled && b.tracked() {
		b.untrack("Close")
	}
	b.release()
	return nil
}

// release returns a Pool buffer's storage, sampling its length for the
// pool's calibration, and its header if it came from Get.
func (b *Buffer) release() {
	p := b.pool
	if p == nil {
		p = Default()
	}
	if b.owned {
		if b.toSample <= 1 {
			p.cal.record(len(b.buf))
			b.toSample = sampleEvery
		} else {
			b.toSample--
		}
		if b.hdr && !checked.Enabled && p.keeper.Keepable(b.buf) {
			p.keeper.Keep(b.buf)
			p.keeper.Kept(b.buf, b.sampled)
			// The header keeps its storage while idle, as bytebufferpool's
			// ByteBuffer does: the next Get's first write needs no second
			// pool round trip. bytepool counts it as put back.
			b.idle(p)
			return
		}
		p.bp.Put(b.buf)
	}
	b.buf, b.off, b.owned = nil, 0, false
	if b.hdr {
		b.state = stFree
		if !checked.Enabled {
			p.hdrs.Put(b)
		}
	}
}

// idle puts b, a header from Get whose storage bytepool counted as given
// back (internal/keep), into p's idle headers, storage kept.
func (b *Buffer) idle(p *Pool) {
	b.buf, b.off = b.buf[:0], 0
	b.state = stFree
	p.hdrs.Put(b)
}
