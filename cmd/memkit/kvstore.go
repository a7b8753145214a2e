package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"
	"unsafe"

	"github.com/VictoriaMetrics/fastcache"
	"github.com/allegro/bigcache/v3"
	"github.com/dgraph-io/ristretto/v2"

	"github.com/memkit/memkit/kv"
)

// This file is the byte maps that the KV bench, `memkit heap` and the key-value
// demo compare: kv.Map, and what a careful Go programmer would write with
// each peer. Each is a kvStore, so that one workload drives them all.

// kvStore is a goroutine-safe map from byte keys to byte values.
type kvStore interface {
	// Get appends key's value to dst; ok is false if key is absent.
	Get(dst, key []byte) ([]byte, bool)
	// Set stores a copy of value under key.
	Set(key, value []byte) error
	Close() error
}

// kvSizing is what a store is told up front: how many entries and how many
// bytes of keys and values it will hold, as a user sizing it would know.
type kvSizing struct {
	entries int
	bytes   int64 // keys + values
	// cacheFactor sizes fastcache: its maxBytes is cacheFactor × bytes.
	cacheFactor float64
}

// kvImpls are the store names in column order; newKVStore builds them.
// "memkit" is kv.Map; "ristretto" runs in the bench only (its Set is
// asynchronous and may drop entries by design, so it cannot hold a data
// set).
var kvImpls = []string{"memkit", "stdmap", "fastcache", "bigcache", "ristretto"}

// kvImplDocs says what each store is; the heap and demo reports print it.
var kvImplDocs = map[string]string{
	"memkit":    "kv.Map, default options (no budget: exact map semantics)",
	"stdmap":    "64 shards of map[string][]byte, each behind a sync.RWMutex; Get copies out under the read lock, Set overwrites in place when the value fits",
	"idmap":     "64 shards of map[uint64][]byte (8-byte keys), each behind a sync.RWMutex; Get copies out under the read lock, Set overwrites in place when the value fits",
	"fastcache": "VictoriaMetrics/fastcache, maxBytes = the data's key+value bytes × --fastcache-size (it is a cache: it may drop entries)",
	"bigcache":  "allegro/bigcache/v3, 1024 shards, no life window, no size limit, sized for the entry count",
	"ristretto": "dgraph-io/ristretto/v2, MaxCost 2× the data; its Set is asynchronous and may drop entries",
	"harness":   "no store: Set keeps nothing and Get builds the expected value; the senders, their garbage and the runtime alone (memkit heap only)",
}

func newKVStore(name string, sz kvSizing) (kvStore, error) {
	switch name {
	case "memkit":
		m, err := kv.New()
		if err != nil {
			return nil, err
		}
		return m, nil
	case "stdmap":
		return newStringMap(), nil
	case "idmap":
		return newIDMap(sz.entries), nil
	case "fastcache":
		f := sz.cacheFactor
		if f == 0 {
			f = 1
		}
		return fastcacheStore{fastcache.New(int(float64(sz.bytes) * f))}, nil
	case "bigcache":
		return newBigcache(sz)
	case "harness":
		return new(harnessStore), nil
	case "ristretto":
		c, err := ristretto.NewCache(&ristretto.Config[[]byte, []byte]{
			NumCounters: int64(max(sz.entries, 1000)) * 10,
			MaxCost:     2 * max(sz.bytes, 1<<20),
			BufferItems: 64,
		})
		if err != nil {
			return nil, err
		}
		return ristrettoStore{c}, nil
	}
	return nil, fmt.Errorf("unknown store %q", name)
}

// harnessStore is memkit heap's floor: a process that runs the same
// senders, garbage and checks with no map behind them. Set keeps nothing;
// Get appends the value the key's generation in gens (which the heap child
// sets after its fill) has, as a map that cost nothing would return it. Its
// latencies are the harness's own: the timers' lateness and the scheduler
// on a machine with as many senders as CPUs. gens is written by the key's
// owning sender and read here by the others, without synchronisation: the
// floor needs no more than a recent generation, and the heap child runs it
// only when asked (--stores harness).
type harnessStore struct{ gens []uint32 }

func (h *harnessStore) Get(dst, key []byte) ([]byte, bool) {
	id := binary.LittleEndian.Uint64(key)
	if id >= uint64(len(h.gens)) {
		return dst, false
	}
	return appendKVValue(dst, id, h.gens[id]), true
}

func (*harnessStore) Set(key, value []byte) error { return nil }
func (*harnessStore) Close() error                { return nil }

// kvShards is the shard count of the standard-library maps: enough that two
// cores rarely meet on one lock.
const kvShards = 64

// stringMap is the careful standard-library map: sharded, read-locked Gets
// that copy out (so that an overwrite may reuse a value's storage), and
// overwrites in place when the new value fits the old one's capacity.
type stringMap struct {
	seed   maphash.Seed
	shards [kvShards]struct {
		mu sync.RWMutex
		m  map[string][]byte
		_  [32]byte // RWMutex (24) + map (8) + 32: one shard per 64-byte line, no false sharing
	}
}

func newStringMap() *stringMap {
	s := &stringMap{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].m = map[string][]byte{}
	}
	return s
}

func (s *stringMap) Get(dst, key []byte) ([]byte, bool) {
	sh := &s.shards[maphash.Bytes(s.seed, key)%kvShards]
	sh.mu.RLock()
	v, ok := sh.m[string(key)] // no allocation: the compiler looks up without a copy
	dst = append(dst, v...)
	sh.mu.RUnlock()
	return dst, ok
}

func (s *stringMap) Set(key, value []byte) error {
	sh := &s.shards[maphash.Bytes(s.seed, key)%kvShards]
	sh.mu.Lock()
	if old, ok := sh.m[string(key)]; ok && cap(old) >= len(value) {
		sh.m[string(key)] = append(old[:0], value...)
	} else {
		sh.m[string(key)] = append([]byte(nil), value...)
	}
	sh.mu.Unlock()
	return nil
}

func (s *stringMap) Close() error { return nil }

// idMap is stringMap for 8-byte keys, as a careful programmer whose keys are
// numeric IDs would write it: map[uint64][]byte, no key strings for the GC.
type idMap struct {
	shards [kvShards]struct {
		mu sync.RWMutex
		m  map[uint64][]byte
		_  [32]byte
	}
}

func newIDMap(entries int) *idMap {
	s := new(idMap)
	for i := range s.shards {
		s.shards[i].m = make(map[uint64][]byte, entries/kvShards)
	}
	return s
}

var errKeyNot8 = errors.New("idmap: keys must be 8 bytes")

func (s *idMap) shard(id uint64) int { return int((id * 0x9E3779B97F4A7C15) >> 58) } // top 6 bits: 64 shards

func (s *idMap) Get(dst, key []byte) ([]byte, bool) {
	if len(key) != 8 {
		return dst, false
	}
	id := binary.LittleEndian.Uint64(key)
	sh := &s.shards[s.shard(id)]
	sh.mu.RLock()
	v, ok := sh.m[id]
	dst = append(dst, v...)
	sh.mu.RUnlock()
	return dst, ok
}

func (s *idMap) Set(key, value []byte) error {
	if len(key) != 8 {
		return errKeyNot8
	}
	id := binary.LittleEndian.Uint64(key)
	sh := &s.shards[s.shard(id)]
	sh.mu.Lock()
	if old, ok := sh.m[id]; ok && cap(old) >= len(value) {
		sh.m[id] = append(old[:0], value...)
	} else {
		sh.m[id] = append([]byte(nil), value...)
	}
	sh.mu.Unlock()
	return nil
}

func (s *idMap) Close() error { return nil }

// fastcacheStore is fastcache's own API: HasGet appends to dst, as kv.Map's
// Get does.
type fastcacheStore struct{ c *fastcache.Cache }

func (f fastcacheStore) Get(dst, key []byte) ([]byte, bool) { return f.c.HasGet(dst, key) }
func (f fastcacheStore) Set(key, value []byte) error        { f.c.Set(key, value); return nil }
func (f fastcacheStore) Close() error                       { f.c.Reset(); return nil }

// bigcacheStore is bigcache as its README configures it, with eviction off:
// no life window and no cleaner, no size limit. Its API takes string keys;
// the key is converted without a copy, since bigcache copies it into the
// entry and keeps no reference (a careful user would do the same). Its Get
// returns a fresh copy of the value, which is appended to dst.
type bigcacheStore struct{ c *bigcache.BigCache }

func newBigcache(sz kvSizing) (kvStore, error) {
	cfg := bigcache.DefaultConfig(100 * 365 * 24 * time.Hour)
	cfg.CleanWindow = 0
	cfg.Shards = 1024
	cfg.MaxEntriesInWindow = max(sz.entries, 1024)
	cfg.MaxEntrySize = int(sz.bytes/int64(max(sz.entries, 1))) + 16
	cfg.Verbose = false
	c, err := bigcache.New(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	return bigcacheStore{c}, nil
}

func (b bigcacheStore) Get(dst, key []byte) ([]byte, bool) {
	v, err := b.c.Get(unsafe.String(unsafe.SliceData(key), len(key)))
	if err != nil {
		return dst, false
	}
	return append(dst, v...), true
}

func (b bigcacheStore) Set(key, value []byte) error {
	return b.c.Set(unsafe.String(unsafe.SliceData(key), len(key)), value)
}

func (b bigcacheStore) Close() error { return b.c.Close() }

// ristrettoStore is ristretto with []byte keys (it keeps only their hashes)
// and a copy of each value, whose cost is its length.
type ristrettoStore struct {
	c *ristretto.Cache[[]byte, []byte]
}

func (r ristrettoStore) Get(dst, key []byte) ([]byte, bool) {
	v, ok := r.c.Get(key)
	return append(dst, v...), ok
}

func (r ristrettoStore) Set(key, value []byte) error {
	r.c.Set(key, append([]byte(nil), value...), int64(len(value)))
	return nil
}

func (r ristrettoStore) Close() error { r.c.Close(); return nil }
