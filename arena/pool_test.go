package arena_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// tree builds a complete binary tree of depth d with alloc.
func tree(d int, alloc func() *node) *node {
	n := alloc()
	if d > 0 {
		n.left = tree(d-1, alloc)
		n.right = tree(d-1, alloc)
	}
	return n
}

// distinct counts the distinct node addresses of the tree at n.
func distinct(n *node, seen map[*node]bool) {
	if n == nil {
		return
	}
	seen[n] = true
	distinct(n.left, seen)
	distinct(n.right, seen)
}

// TestTree_DistinctNodes checks that a tree of depth d built with each
// allocator has 2^(d+1)-1 distinct nodes, unlike the seed's "slice arena",
// whose subtrees alias.
func TestTree_DistinctNodes(t *testing.T) {
	depths := []int{0, 1, 4, 10, 16}
	if testing.Short() {
		depths = depths[:4]
	}
	for _, d := range depths {
		allocs := map[string]func() func() *node{
			"gc":    func() func() *node { return func() *node { return new(node) } },
			"arena": func() func() *node { a := arena.NewArena(); return func() *node { return arena.New[node](a) } },
			"arena-small-chunks": func() func() *node {
				a := arena.NewArena(arena.WithChunkSize(64))
				return func() *node { return arena.New[node](a) }
			},
			"typed": func() func() *node { ty := arena.NewTyped[node](); return ty.New },
			"pool":  func() func() *node { a := arena.NewPool().Get(); return func() *node { return arena.New[node](a) } },
		}
		for name, mk := range allocs {
			t.Run(fmt.Sprintf("depth=%d/alloc=%s", d, name), func(t *testing.T) {
				root := tree(d, mk())
				seen := map[*node]bool{}
				distinct(root, seen)
				if want := 1<<(d+1) - 1; len(seen) != want {
					t.Errorf("%d distinct nodes; want %d", len(seen), want)
				}
			})
		}
	}
}

func TestPool_GetPut(t *testing.T) {
	p := arena.NewPool(arena.WithChunkSize(1 << 10))
	a := p.Get()
	for range 100 {
		arena.New[node](a)
	}
	first := arena.New[node](a)
	p.Put(a)
	b := p.Get() // usually a again
	n := arena.New[node](b)
	if n.left != nil || n.right != nil {
		t.Fatal("object from a pooled arena not zeroed")
	}
	p.Put(b)
	_ = first
	var st memkit.Stats
	p.ReadStats(&st)
	// The checked build gives a put arena's chunks up while it waits out
	// of reuse.
	if st.Allocs != 102 || st.Frees != 102 || (st.ReservedBytes == 0) != checked.Enabled {
		t.Errorf("pool stats %+v", st)
	}

	wantMisuse(t, msgForeign, "Put", checked.ForeignFree, func() { p.Put(arena.NewArena()) })
	wantMisuse(t, msgForeign, "Put", checked.ForeignFree, func() { p.Put(arena.NewPool().Get()) })
	wantMisuse(t, msgForeign, "Put", checked.ForeignFree, func() { p.Put(nil) })
	c := p.Get()
	c.Free()
	wantFreed(t, "Put", func() { p.Put(c) })
	d := p.Get()
	p.Put(d)
	wantMisuse(t, msgPutTwice, "Put", checked.DoubleFree, func() { p.Put(d) })
	var zero arena.Pool
	memtest.CheckPanic(t, "memkit/arena: Pool not created with NewPool", func() { zero.Get() })
}

// TestPool_Race runs requests on many goroutines, each with an arena from
// one pool, checking that objects are zeroed and that no two live objects
// share memory. Run it with -race.
func TestPool_Race(t *testing.T) {
	p := arena.NewPool(arena.WithChunkSize(2 << 10))
	const goroutines, requests = 8, 200
	var wg sync.WaitGroup
	models := make([]*memtest.Model, goroutines)
	errs := make(chan error, goroutines)
	for g := range goroutines {
		models[g] = memtest.NewModel(g)
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := models[g]
			for r := range requests {
				a := p.Get()
				var list *node
				for i := range 20 + r%50 {
					n := arena.New[node](a)
					if n.left != nil || n.right != nil {
						errs <- fmt.Errorf("goroutine %d: node not zeroed", g)
						return
					}
					n.left = list
					list = n
					b := arena.MakeSlice[byte](a, 16+i%40, 16+i%40)
					if !isZero(b) {
						errs <- fmt.Errorf("goroutine %d: bytes not zeroed", g)
						return
					}
					if _, err := m.Add(b); err != nil {
						errs <- err
						return
					}
				}
				if err := m.VerifyAll(); err != nil {
					errs <- err
					return
				}
				m.Live = m.Live[:0]
				p.Put(a)
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var st memkit.Stats
	p.ReadStats(&st)
	if st.Allocs != st.Frees || st.Allocs == 0 {
		t.Errorf("pool stats %+v", st)
	}
}

// TestPool_RaceSharedRecycler frees arenas on many goroutines at once, so
// that the shared chunk recycler hands chunks from one goroutine's arena to
// another's.
func TestPool_RaceSharedRecycler(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 100 {
				a := arena.NewArena(arena.WithChunkSize(512))
				ty := arena.NewTyped[rec](arena.WithChunkSize(512))
				for i := range 100 {
					n := arena.New[rec](a)
					m := ty.New()
					if n.name != "" || m.name != "" || n.next != nil || m.next != nil {
						t.Errorf("goroutine %d request %d: not zeroed", g, r)
						return
					}
					n.name, n.n, m.name, m.n = "x", int64(i), "y", int64(i)
				}
				a.Free()
				ty.Free()
			}
		}()
	}
	wg.Wait()
}

func TestPool_DroppedArenaReleased(t *testing.T) {
	if testing.Short() {
		t.Skip("relies on GC timing")
	}
	var held int64
	var mu sync.Mutex
	p := arena.NewPool(arena.WithAccount(func(d int64) error {
		mu.Lock()
		held += d
		mu.Unlock()
		return nil
	}))
	a := p.Get()
	arena.New[node](a)
	p.Put(a)
	a = nil
	// A sync.Pool drops idle items over two GC cycles.
	for range 20 {
		runtime.GC()
		mu.Lock()
		h := held
		mu.Unlock()
		if h == 0 {
			break
		}
	}
	var st memkit.Stats
	p.ReadStats(&st)
	mu.Lock()
	defer mu.Unlock()
	if held != 0 || st.ReservedBytes != 0 || st.Releases == 0 {
		t.Errorf("account holds %d, pool stats %+v", held, st)
	}
	_ = unsafe.Pointer(nil)
}
