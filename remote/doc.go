// Package remote is convcache's cluster tier: a cache.Remote kept in one
// Redis server that every node of a cluster shares, behind each node's local
// file. A result measured on any node becomes a hit on all the others.
//
// The engine (package cache) asks the tier only on a local miss, so a hit in
// memory or in the local file never touches the network. A remote hit is
// checked, written to the local file and returned; later lookups of the key
// are local hits. Local inserts are written to Redis behind the caller's
// back; a get_or_create that misses everywhere takes a short cluster lock,
// so that one node benchmarks a new shape while the others wait for its
// result.
//
// # Configuration
//
// New takes a URL, redis://[user:pass@]host[:port][/db] or rediss://... for
// TLS (certificates are checked against the system roots), and Options. The
// C library reads CONVCACHE_REMOTE, CONVCACHE_REMOTE_TIMEOUT_MS (default
// 50) and CONVCACHE_REMOTE_TTL (package internal/config).
//
// # Bounded waits, failing open
//
// Every call that waits for Redis (Get, TryLock, Flush, Close) waits at most
// Options.Timeout (DefaultTimeout, 50 ms). go-redis is configured so that
// the bound holds: one context deadline per call, no command retries, one
// dial attempt, and dial, read, write and pool timeouts no longer than the
// deadline.
//
// A call that fails or times out marks the server down: it is counted, one
// warning line is printed (once per process and server), and every later
// call skips the server at once (a miss, a granted lock, a queued write)
// until a background probe (PING, with exponential backoff from 100 ms to
// 5 s) gets an answer. Writes queued meanwhile are sent then. A value that
// fails its checks is counted in Rejected and treated as a miss: garbage in
// Redis never reaches the caller.
//
// # Write-behind
//
// Put encodes the record and appends it to a bounded queue (4096 entries and
// 64 MiB by default) and returns; it never blocks. A full queue drops its
// oldest entries, counted in Dropped. One goroutine sends the queue in
// pipelined batches of up to 256 SETs, one round trip each. Flush (called by
// the engine's Save) waits for what was queued before it, at most the
// timeout. In read-only mode (CONVCACHE_MODE=ro) nothing is written: the
// engine does not call Put or Flush, and Options.ReadOnly makes Put and
// TryLock no-ops as well.
//
// # Cluster single flight
//
// TryLock sets the key's lock key with SET NX PX to a token naming the host,
// process and a random number. The holder renews it (a compare-and-PEXPIRE
// script) every third of its TTL (DefaultLockTTL, 10 s), so a long build
// keeps it and a holder that dies frees it within the TTL. Unlock queues a
// compare-and-delete script behind the holder's own writes, so the value
// reaches Redis before the lock is freed, and an expired lock taken over by
// another node is never deleted by its former holder.
//
// # Remote format
//
// Keys (the hashes are XXH64, seed 0, as 16 lowercase hex digits):
//
//	entry:  <prefix>:v1:<hash of scope>:<hash of key>        a string, the record
//	lock:   <prefix>:v1:<hash of scope>:<hash of key>:lock   a string, the holder's token
//
// The prefix is "convcache" unless Options.Prefix says otherwise. A record
// (all integers little-endian):
//
//	+--------+---------+-------+-----------+---------+----------+-----------+
//	| magic  | version | flags | scope len | key len | reserved | value len |
//	| "CCRV" | u8 = 1  | u8 = 0| u16       | u16     | u16 = 0  | u32       |
//	+--------+---------+-------+-----------+---------+----------+-----------+
//	| written (unix ms) i64 | scope | key | value | CRC-32C (Castagnoli) u32  |
//	|                       |       |     |       | of every byte before it   |
//	+-----------------------+-------+-----+-------+---------------------------+
//
// A record is accepted only if, checked in this order, it is long enough
// for its header, has the magic, version 1 and zero flags, its lengths add
// up to its size, its checksum matches, its scope and key equal the ones
// asked for in full (so a hash collision, or a value copied to another key
// or scope, is a miss), and its value is within Options.MaxValue (1 MiB by
// default). Lookups read with GETRANGE, so a foreign value of any size
// costs at most one record's length to read.
//
// An optional TTL (CONVCACHE_REMOTE_TTL, Options.TTL) is set on each write;
// it counts from the last write of the key, not from its last use.
//
// # Caveats
//
//   - Anyone who can write to the Redis database can make nodes miss, but
//     not return a value for another key or scope: the checks above see to
//     that. The checksum detects damage, not forgery; a writer that builds
//     a valid record for a key can make nodes use its value. Give the tier
//     a database that only the cluster's jobs can write (a password, an ACL
//     user, TLS).
//   - The deadline bounds each call into the tier. A get_or_create of a
//     cold key makes up to four (lookup, lookup, lock, lookup) before it
//     builds, so a server that answers every call just under the deadline
//     can delay it by up to four deadlines; one that misses the deadline
//     costs one, since the calls after it skip the server.
//   - Lookups that skip a down server are not counted as misses or errors;
//     Errors counts the calls (and probes) that failed.
//   - Flush and Close report no error: the tier fails open, and its
//     warning line and counters are the report.
//   - New silences go-redis's own logger, which is process-wide.
//   - The renewal of a lock and a build that outlives the build timeout of
//     the nodes waiting for it let them build it too: a lock saves work, it
//     is not needed for correctness.
package remote
