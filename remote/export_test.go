package remote

import "time"

// Test hooks: the Redis key names and the record encoding, so tests can
// write values straight into Redis.
var (
	EntryKey = entryKey
	LockKey  = lockKey
)

func Record(scope string, key, value []byte) []byte {
	return appendRecord(nil, scope, key, value, time.Now().UnixMilli())
}
