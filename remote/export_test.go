package remote

import (
	"sync/atomic"
	"time"
)

// Test hooks: the Redis key names and the record encoding, so tests can
// write values straight into Redis, and panics injected into the tier's
// goroutines.
var (
	EntryKey = entryKey
	LockKey  = lockKey
)

// Record encodes a record without a MAC.
func Record(scope string, key, value []byte) []byte {
	return appendRecord(nil, scope, key, value, time.Now().UnixMilli(), nil)
}

// RecordMAC encodes a record with a MAC under macKey.
func RecordMAC(scope string, key, value, macKey []byte) []byte {
	return appendRecord(nil, scope, key, value, time.Now().UnixMilli(), newMACKey(macKey))
}

// SetHooks sets the functions the writer loop calls before sending a batch
// and a lock renewal calls on each tick (nil: none).
func SetHooks(send, renew func()) {
	set := func(h *atomic.Pointer[func()], f func()) {
		if f == nil {
			h.Store(nil)
		} else {
			h.Store(&f)
		}
	}
	set(&testHookSend, send)
	set(&testHookRenew, renew)
}
