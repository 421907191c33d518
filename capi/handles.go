package main

import (
	"sync"
	"sync/atomic"

	"github.com/convcache/convcache/cache"
)

// A token is gen<<slotBits | slot, with slot >= 1, so no valid token is 0
// (NULL) and a reused slot gets a new generation.
const (
	slotBits = 24
	maxSlots = 1 << slotBits
)

type handle struct {
	c   *cache.Cache
	gen uint64
}

// handleTable maps tokens to caches. Lookups are lock-free.
type handleTable struct {
	slots atomic.Pointer[[]atomic.Pointer[handle]]
	mu    sync.Mutex // guards growth, free and gen
	free  []uint64
	next  uint64
	gen   uint64
}

var handles handleTable

func (t *handleTable) get(tok uintptr) *cache.Cache {
	slot, gen := uint64(tok)&(maxSlots-1), uint64(tok)>>slotBits
	sp := t.slots.Load()
	if sp == nil || slot >= uint64(len(*sp)) {
		return nil
	}
	h := (*sp)[slot].Load()
	if h == nil || h.gen != gen {
		return nil
	}
	return h.c
}

// each calls f with every open handle's cache.
func (t *handleTable) each(f func(*cache.Cache)) {
	sp := t.slots.Load()
	if sp == nil {
		return
	}
	for i := range *sp {
		if h := (*sp)[i].Load(); h != nil {
			f(h.c)
		}
	}
}

func (t *handleTable) add(c *cache.Cache) (uintptr, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var slot uint64
	if n := len(t.free); n > 0 {
		slot, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if t.next == 0 {
			t.next = 1
		}
		if t.next >= maxSlots {
			return 0, false
		}
		slot = t.next
		t.next++
	}
	sp := t.slots.Load()
	if sp == nil || slot >= uint64(len(*sp)) {
		n := 64
		if sp != nil {
			n = 2 * len(*sp)
		}
		grown := make([]atomic.Pointer[handle], n)
		if sp != nil {
			for i := range *sp {
				grown[i].Store((*sp)[i].Load())
			}
		}
		t.slots.Store(&grown)
		sp = &grown
	}
	t.gen++
	gen := t.gen & (1<<(64-slotBits) - 1)
	(*sp)[slot].Store(&handle{c: c, gen: gen})
	return uintptr(gen<<slotBits | slot), true
}

// openHandle gives c a token and makes its hits answerable in C under it.
func openHandle(c *cache.Cache) (uintptr, bool) {
	tok, ok := handles.add(c)
	if ok {
		publishHandle(c, tok)
	}
	return tok, ok
}

// closeHandle closes tok's cache, if tok is open. The token leaves the
// table first: calls that look it up from then on get CONVCACHE_E_HANDLE,
// and an open may take its slot. Then its C hit path goes (the C table's
// slot is cleared only if it still holds this handle: publish.go), then
// Close, which calls that got the cache before the removal race (their
// answers: cache/lifecycle.go).
func closeHandle(tok uintptr) error {
	c := handles.remove(tok)
	if c == nil {
		return nil
	}
	if hook := testHookRemoved.Load(); hook != nil {
		(*hook)()
	}
	unpublishHandle(tok)
	return c.Close()
}

// testHookRemoved, when a test sets it, runs in closeHandle between the
// removal from the table and the clearing of the C hit path.
var testHookRemoved atomic.Pointer[func()]

// remove unregisters tok and returns its cache, or nil if tok is not open.
func (t *handleTable) remove(tok uintptr) *cache.Cache {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.get(tok)
	if c == nil {
		return nil
	}
	slot := uint64(tok) & (maxSlots - 1)
	(*t.slots.Load())[slot].Store(nil)
	t.free = append(t.free, slot)
	return c
}
