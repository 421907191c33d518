// Package remote is convcache's cluster tier: a cache.Remote kept in one
// Redis server that every node of a cluster shares, behind each node's local
// file. A result measured on any node becomes a hit on all the others.
//
// The engine (package cache) asks the tier only on a local miss, so a hit in
// memory or in the local file never touches the network. A remote hit is
// checked and returned; later lookups of the key are local hits. An
// authenticated hit (one with a valid MAC, see "Trust") is also written to
// the local file; any other is kept in the process's memory only. Local
// inserts are written to Redis behind the caller's back; a get_or_create
// that misses everywhere takes a short cluster lock, so that one node
// benchmarks a new shape while the others wait for its result.
//
// # Configuration
//
// New takes a URL, redis://[user:pass@]host[:port][/db] or rediss://... for
// TLS (certificates are checked against the system roots), and Options. The
// C library and the command-line tool read CONVCACHE_REMOTE,
// CONVCACHE_REMOTE_TIMEOUT_MS (default 50),
// CONVCACHE_REMOTE_BUILD_TIMEOUT_MS (default 1000), CONVCACHE_REMOTE_TTL, and the
// record MAC key from the file that CONVCACHE_REMOTE_KEY_FILE names or from
// CONVCACHE_REMOTE_KEY itself through package internal/config (Resolve,
// ReadMACKeyFile), which also holds the bounds this package checks;
// OptionsFor turns its settings into Options. A key asked for
// that cannot be used (both set, a file another user could change or that
// all can read, a key under 16 bytes) turns the tier off with one warning:
// going on without it would trust what it was meant to check. In a
// privileged process (AT_SECURE) these variables are not read at all.
//
// # Trust
//
// Whoever can write to the Redis database, and without TLS whoever is on
// the network path to it, controls what the tier reads. What that allows:
//
//   - Never a crash, a hang or unbounded memory: every reply is bounded
//     before go-redis allocates for it (see "Bounded replies"), every call
//     by the deadline, every record by MaxValue.
//   - Never a value for another key or scope, without a key too: a record
//     names its scope and key in full, and both must match.
//   - Without a MAC key, a forged record that passes those checks is
//     returned: the CRC detects damage, not forgery. Such a hit is kept in
//     the process's memory only, never written to the local file, so a
//     poisoned database cannot poison every node's file for good; each new
//     process asks the server again. Records are written without a MAC.
//   - With a MAC key (Options.MACKey), records are written with an
//     HMAC-SHA256 tag, and a record without a valid tag under the key is
//     rejected (counted in Rejected): a writer without the key can make
//     nodes miss, but not use its values. Hits are then written to the local
//     file. An old record of the same scope and key, tagged with the key,
//     can be replayed; it holds a value the cluster itself measured.
//   - TLS (rediss://) keeps the network path from reading or changing
//     anything, and the password (AUTH) from being read on it; it does not
//     make the server's contents trustworthy. Without TLS, keys, values and
//     the password cross the network in clear.
//   - The server decides who holds a build lock, so a hostile one can make
//     a get_or_create of a cold key wait up to the build timeout, or let
//     every node build it.
//
// # Bounded waits, failing open
//
// Every plain call that waits for Redis (Get, TryLock, Flush) waits at most
// Options.Timeout (DefaultTimeout, 50 ms). The calls for a key about to be
// built (GetBuild, TryLockBuild: get_or_create's lookup, its lock and the
// lookups of a node waiting for another's build), the background writes,
// lock renewals, probes and Close's flush wait at most
// Options.BuildTimeout (DefaultBuildTimeout, 1 s; never under Timeout):
// such a miss starts a benchmark of hundreds of milliseconds, and a busy
// node must not benchmark what another is benchmarking because one answer
// came 60 ms late. go-redis is configured so that the bounds hold: one
// context deadline per call, no command retries, one dial attempt, and
// dial, read, write and pool timeouts no longer than the longer deadline.
//
// A plain call that fails or times out marks the server down: it is
// counted, one warning line is printed (once per process and server), and
// every later plain call skips the server at once (a miss, a granted lock)
// until a background probe (PING, with exponential backoff from 100 ms to
// 5 s) gets an answer. A server that refuses the connection, or does not
// answer a build's call, a write or a probe within BuildTimeout, is also
// marked unreachable: then the build's calls skip it too, and writes wait
// for the probe. Writes queued meanwhile are sent then. A build's unlock
// waits (up to BuildTimeout) until its value and the release are sent, and
// so does the C library at process exit (cache.Cache.AtExit), so that the
// nodes waiting for them get them. A value that fails its checks is counted
// in Rejected and treated as a miss: garbage in Redis never reaches the
// caller.
//
// # Bounded replies
//
// go-redis allocates the length a reply announces before the bytes arrive,
// so one header announcing a 1 TiB string, or an array of 2^31 elements,
// would make the Go runtime abort the host process (out of memory is fatal,
// not a panic). The tier dials through its own dialer, whose connections
// follow the RESP2 stream as it passes (the protocol is pinned to RESP2)
// and fail before go-redis reads a reply that announces or holds more than
// the largest record plus 64 KiB, more than 1024 array elements, arrays
// nested deeper than 8, a line over 64 KiB, or a type byte that is not
// RESP2's. A failed connection is a failed call: a miss, counted in Errors,
// one warning naming the bound, the server marked down until a probe
// answers.
//
// # Goroutines
//
// The tier starts a writer loop and one renewal per held lock. Each
// recovers a panic and reports it, with its stack, on the warning output: a
// panic in the writer turns the tier off for the process (lookups miss,
// writes are dropped, locks granted); one in a renewal lets that lock
// lapse. The dialer, which runs in go-redis's goroutines, turns a panic
// into an error.
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
//	| "CCRV" | u8 = 1  | u8    | u16       | u16     | u16 = 0  | u32       |
//	+--------+---------+-------+-----------+---------+----------+-----------+
//	| written (unix ms) i64 | scope | key | value | [tag] | CRC-32C u32      |
//	|                       |       |     |       |       | (Castagnoli) of  |
//	|                       |       |     |       |       | every byte before|
//	+-----------------------+-------+-----+-------+-------+------------------+
//
// Flags: bit 0 (MAC) means a 32-byte tag follows the value:
// HMAC-SHA256, under the MAC key, of the string "convcache remote
// record\x00" followed by every byte of the record before the tag (so it
// covers the header, the scope, the key and the value). Other bits are 0.
// Readers from before the MAC reject any non-zero flags, so they treat a
// record with a tag as a newer format: a miss, counted in Rejected.
//
// A record is accepted only if, checked in this order, it is long enough
// for its header, has the magic, version 1 and no unknown flags, its
// lengths add up to its size, its checksum matches, its scope and key equal
// the ones asked for in full (so a hash collision, or a value copied to
// another key or scope, is a miss), its value is within Options.MaxValue
// (1 MiB by default), and, when the reader has a MAC key, it has a tag and
// the tag is right. A reader without a key reads a record with a tag too,
// unauthenticated (it cannot check the tag). Lookups read with GETRANGE, so
// a foreign value of any size costs at most one record's length to read.
//
// An optional TTL (CONVCACHE_REMOTE_TTL, Options.TTL) is set on each write;
// it counts from the last write of the key, not from its last use.
//
// # Caveats
//
//   - Without a MAC key, anyone who can write to the Redis database can
//     make the processes that read a key use a value of their choosing (in
//     memory; see "Trust"). Set a key, and give the tier a database that
//     only the cluster's jobs can write (a password, an ACL user, TLS).
//   - The key is one key: changing it makes every record written before a
//     miss (rejected) until it is written again. Change Prefix with it to
//     keep old and new records apart.
//   - Without a key, every process asks the server once for each key it
//     needs (remote hits are not kept in the file), where with a key one
//     process per node does.
//   - The deadlines bound each call into the tier. A get_or_create of a
//     cold key makes up to three build calls (lookup, lock, lookup) before
//     it builds, so a server that answers every call just under the build
//     deadline can delay it by up to three; one that misses it costs one,
//     since the calls after it skip the server.
//   - Lookups that skip a down server are not counted as misses or errors;
//     Errors counts the calls (and probes) that failed.
//   - Flush and Close report no error: the tier fails open, and its
//     warning line and counters are the report.
//   - New silences go-redis's own logger, which is process-wide.
//   - The renewal of a lock and a build that outlives the build timeout of
//     the nodes waiting for it let them build it too: a lock saves work, it
//     is not needed for correctness.
package remote
