package cache

import (
	"runtime"
	"sync/atomic"
)

// Pins held for readers outside Go (shared.go, index_shared.go), counted so
// that a leak is seen: a Pinner still pinning when it is collected ends the
// process, so every one must be unpinned once, by its Publisher's free.
// Every Pin and Unpin of the package goes through pin and unpin.

var (
	livePinners atomic.Int64 // Pinners holding pins
	liveIndexes atomic.Int64 // indexes published and not yet freed
)

// pin pins objs with p, which holds nothing yet, and counts p.
func pin(p *runtime.Pinner, objs ...any) {
	for _, o := range objs {
		p.Pin(o)
	}
	livePinners.Add(1)
}

// unpin unpins what pin pinned with p.
func unpin(p *runtime.Pinner) {
	p.Unpin()
	livePinners.Add(-1)
}

// Pinned reports the Pinners that hold pins and the indexes published, in
// this process, whose Publisher has not freed them yet. Once every handle
// is closed and its Publisher has freed what it retired, both are 0: the
// lifecycle tests (capi's, tests/test_lifecycle.c through the test build's
// convcache_test_live) check that nothing leaks.
func Pinned() (pinners, indexes int64) {
	return livePinners.Load(), liveIndexes.Load()
}
