package main

import (
	"runtime/debug"
	"sync"
)

// memoryPolicy is the C library's garbage-collection policy around the
// engine's large operations (cache.MemoryPolicy). The library is the only Go
// code in its host process, so process-wide settings are its to make; the
// engine leaves them alone for Go programs that import it.
//
// The garbage collector lets the heap grow to twice what it held after the
// last collection. A compaction holds the file image and the merged records
// beside the live index, so with that headroom a compaction of a million
// entries would take the process to over a gigabyte. While one runs, the
// headroom is a fifth instead; the setting is restored when the last
// compaction ends. A dropped file image of more than 4 MiB is collected and
// returned to the operating system at once: a long-lived host should not
// carry it.
type memoryPolicy struct {
	mu     sync.Mutex
	users  int
	before int
}

var memory memoryPolicy

func (m *memoryPolicy) Compacting() (done func()) {
	m.mu.Lock()
	if m.users == 0 {
		m.before = debug.SetGCPercent(20)
	}
	m.users++
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		if m.users--; m.users == 0 {
			debug.SetGCPercent(m.before)
		}
		m.mu.Unlock()
	}
}

func (m *memoryPolicy) Dropped(n int64) {
	if n > 1<<20 {
		debug.FreeOSMemory()
	}
}
