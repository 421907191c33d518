// Package cache is the convcache engine: a persistent map from opaque keys
// to opaque values, such as cuDNN's benchmark results keyed by convolution
// parameters, kept in one file that many threads and processes share.
//
// It is pure Go and usable directly from Go programs; the C ABI in package
// capi is a thin layer over it. The engine changes no process-wide setting
// (the garbage collector's included): a host that wants its large
// operations to tune memory says so with Options.Memory, as the C library
// does. The codecs of the file format below are in internal/format; the
// offline tools' view of a whole file, every scope, is internal/cachefile.
//
// # Model
//
// A Cache is a handle on one file seen through one scope, an environment
// fingerprint (GPU model, driver, library versions). Entries written under
// one scope are never returned under another; they stay in the file for
// handles of their own scope. Keys are compared in full, never by hash
// alone.
//
// Find answers from an in-memory index without taking any lock. With a
// Publisher (the C library) the index is also read from C, so that a hit
// through the C ABI never enters Go (shared.go); its entries are then laid
// out in the order the process first uses them (index_shared.go). On a miss it
// first checks the file for records other processes appended (one fstat when
// nothing changed), so a process sees its peers' results without reloading.
// Open reads a compacted file's header, snapshot index and journal, not its
// snapshot: a miss decodes the one snapshot chunk that can hold its key, so
// a cold process's first answer costs about the same whatever the file's
// size (see Snapshot index).
// Insert appends a record to the file before it returns, under an exclusive
// lock on a sidecar file (package lock); a process killed right after loses
// nothing. Save fsyncs. When the journal of appended records has grown past
// both a threshold and the snapshot, an insert or save compacts the file into
// a zstd-compressed snapshot: a new file is written beside the old one,
// synced and renamed over it, so a crash leaves one or the other, never a mix.
// Compaction merges what every process wrote, because it runs under the same
// lock as every append.
//
// # File format
//
// All integers are little-endian. A file is a header followed by frames:
//
//	header (32 bytes)
//	+--------+---------+-------------+--------------------+-------+-----------+
//	| magic  | version | header size | created (unix ns)  | flags | CRC-32C   |
//	| 8 B    | u32 = 1 | u32 = 32    | i64                | u32   | of 0..27  |
//	+--------+---------+-------------+--------------------+-------+-----------+
//	magic = 89 'C' 'C' 'D' 'B' 0D 0A 1A
//	flags bit 0: written by compaction (created is then the last compaction);
//	other bits 0. Readers ignore flags they do not know.
//
//	frame (16-byte header + payload)
//	+-----------+------+-------+----------+-------------+------------------------+
//	| sync      | type | flags | reserved | payload len | CRC-32C (Castagnoli)   |
//	| E7 'CCR'  | u8   | u8    | u16 = 0  | u32         | of bytes 4..11+payload |
//	+-----------+------+-------+----------+-------------+------------------------+
//
//	type 1 put       scope hash u64 | time ms i64 | uvarint key len | key | value
//	type 2 scope     scope hash u64 | scope name
//	type 3 touch     scope hash u64 | time ms i64 | key hash u64 ...
//	type 4 snapshot  scope hash u64 | entry count u32 | body (zstd if flags&1):
//	                 uvarint name len | name | varint base ms |
//	                 { uvarint klen | uvarint vlen | uvarint inserted-base |
//	                   uvarint used-inserted | key | value } ...
//	type 5 pad       ignored bytes (see Bounds); with flags&1, the snapshot
//	                 index: layout u8 = 1 | snapshot end u64 | uvarint chunks |
//	                 { scope hash u64 | uvarint frame bytes | uvarint entries |
//	                   uvarint first-key len | first key } ...
//
// Readers skip frame types they do not know. A zstd body is exactly one
// zstd frame, without a dictionary.
//
// Scope and key hashes are XXH64 (seed 0). A compacted file is the header,
// the snapshot, then the journal:
//
//	header | index | chunk | chunk | ... | pad ... | put, scope, touch frames ...
//	       |<------------- snapshot ------------->|<-------- journal -------->
//
// The snapshot is the run of snapshot and pad frames after the header: the
// snapshot index (a pad frame, so a reader that does not know it skips it),
// the chunks (one scope's entries each, scopes in hash order, keys sorted
// within a scope, each chunk's first key after the last key of the one
// before), and pad frames if the chunks need them (see Bounds). The journal
// is what writers appended since. A put's scope is named by a scope frame
// earlier in the same file. A file compacted down to no entries, or written
// before the index existed, has no index.
//
// # Snapshot index
//
// The index lists every chunk in file order: its scope, its frame's length
// (the first chunk starts right after the index, each next one right after
// the one before), its entry count and its first key; and the snapshot's
// end, where the journal starts. Open reads the header, the index and the
// journal; a find that misses in memory decodes the chunk of its scope whose
// first key is the greatest not after its key, and adds that chunk's entries
// to the index, except keys the journal or the handle wrote (they are newer).
//
// Like everything in a file, the index is a hint. Open uses it only if it is
// a valid frame, well formed, its counts and lengths bounded by its bytes,
// its chunks in order and within the file, the pad frames up to the end it
// gives valid. A chunk is used through it only if it is a valid snapshot
// frame of the handle's scope holding exactly what the index says: as many
// entries, keys sorted from its first key and before the next chunk's. A
// handle that meets anything else (a damaged chunk, a mismatch, a read
// error, a chunk beyond the decode budget) reads the whole file at once,
// and answers from that, as a handle of a file without an index does.
//
// # Versions and compatibility
//
// The header's version is the file format's version: 1. It changes only for
// a change that a reader of the previous version could misread; such a
// reader then refuses the file (ErrFormat: newer than this library) and
// never writes it. Additions that readers skip by the rules above keep the
// version: new frame types, frame flags and header flags, the snapshot index.
//
//   - A reader older than the index reads a file with one whole, as it reads
//     any file: the index is a pad frame to it, part of the snapshot, so its
//     snapshot and journal are where newer readers see them. A compaction it
//     runs writes a file without an index, which newer readers read whole
//     until a newer version compacts it again.
//   - A newer reader reads a file without an index (written by an older
//     version, or never compacted) whole, as before.
//   - An index whose layout byte it does not know is skipped: the file is
//     read whole. The index's layout changes without a new format version.
//
// # Bounds
//
// Every byte of a file may have been written by someone else, checksums
// included, so every count and length in it is a hint, bounded by the bytes
// that carry it, and reading a file costs memory proportional to its size
// and time linear in it:
//
//   - A snapshot chunk's entry count sizes tables only up to what its bytes
//     can hold (16 entries per 128 bytes of payload), and counts the
//     snapshot for compaction the same way.
//   - A chunk decodes to at most what a writer produces: 128 KiB plus one
//     maximal record. One reading of a file decodes at most 16 times the
//     file's size (plus one maximal chunk), each record counted as at least
//     128 bytes; a chunk that does not fit is damage and is not decoded.
//     Writers add pad frames to a file whose snapshot would expand more
//     (values that compress extremely well), so files this package writes
//     are always read whole.
//   - Finding the next valid frame after damage costs time linear in the
//     bytes scanned, however many fake frame headers the damage holds, and
//     a reader that left an unfinished tail does not scan it again until
//     the file changes.
//   - Keys take index slots from their hash times a multiplier chosen at
//     random per index, so a file cannot plant keys that all collide.
//   - A lazily opened handle decodes chunks within the same budget as a
//     full read; the snapshot index costs memory bounded by its bytes.
//
// # Damage
//
// The header is validated in a fixed order: magic (ErrFormat: not a
// convcache file), version (ErrFormat: newer than this library), checksum
// (ErrCorrupt). Such files are refused and never overwritten.
//
// Every frame carries its own checksum. A damaged frame (bad sync word,
// length or checksum) is skipped by scanning for the next valid frame, so one
// flipped byte costs one record, or one snapshot chunk (at most about 128 KiB
// of entries), and nothing else. A chunk that is malformed or beyond the
// bounds above is damage too: its entries are skipped. A flipped bit in the
// header's magic number or version (with them restored, its checksum
// matches) is a damaged header, not a foreign or newer file.
//
// A torn tail is not damage: it is what a writer killed mid-append leaves,
// the start of one journal frame (put, scope, touch, or a type a later
// version writes; never a snapshot or pad frame) with fewer bytes than its
// header claims, after the last complete frame of the file and at or after
// the snapshot's end. It loses nothing that was acknowledged. A reader that
// does not hold the lock treats it as a write in progress and looks again
// later; a writer, holding the lock, cuts it off before appending. Nothing
// else is ever cut off:
//
//   - Damage in the snapshot is damage wherever it falls, the last chunk
//     included: compaction writes the snapshot whole and syncs it before the
//     rename, so nothing in it is being written or can be torn. A reader
//     declares it at once, lock or not, and never reports a damaged range
//     across the snapshot's end (the journal's part is told apart). Where
//     the snapshot ends is the index's snapshot end. A file without an index
//     (written before indexes existed, or whose index is damaged) says where
//     its snapshot ends only as far as its valid frames go (the run of
//     snapshot and pad frames after the header); there the bytes decide
//     alone, by the rule above: a chunk cut short or failing its checksum
//     at the end of such a file is a snapshot frame, so damage.
//   - A complete frame that fails its checksum is damage, even the last
//     frame of the journal, and so is a complete frame whose length field
//     was damaged (its bytes check out with the length they really have).
//     A single flipped bit anywhere in a file is therefore always damage.
//   - Damage followed by valid frames is damage.
//   - A machine that crashed (power, kernel) before appended data reached
//     the disk may leave a journal tail that is not the start of a frame
//     (zeros, on some file systems): damage, since entries that Insert
//     acknowledged and Save had not synced are lost there.
//   - At the very end of the journal, a reader without the lock leaves
//     anything unfinished for later, damage included (only the lock tells
//     it from a write in progress); a writer declares it, and so does
//     convcache verify.
//
// Damage is counted (Stats.DamagedBytes) and stays in the file: readers and
// writers skip it, and writers append after it. Only a rewrite drops it
// (compaction, or the tools' rewrite: internal/cachefile), by writing what it
// can still read; before it publishes the new file, it keeps the damaged
// bytes beside the old one, for inspection, in PATH.damaged-TIMESTAMP (UTC
// to the nanosecond): each damaged range at its offset in the old file,
// holes elsewhere, created exclusively in the same directory with the cache
// file's mode and group. The newest three such files are kept; a rewrite
// that saves another removes the oldest. A rewrite that cannot keep them is
// not published (the file stays as it was, still readable), and compaction
// warns with the name of each file it keeps.
//
// # Caveats
//
//   - Scope names are identified by a 64-bit hash; two scopes whose names
//     collide would share entries (a warning is printed if it is ever seen).
//   - A stalled process that holds the file lock delays writers by at most
//     the lock timeout; their entries are kept in memory (ErrPending) and
//     written later. Finds never wait.
//   - Network file systems (NFS, Lustre, GPFS, CIFS) are detected and
//     reported: their locks and rename are weaker than a local disk's.
//   - A hit does not write the file. Use of entries is recorded in memory and
//     written as touch frames by Save and Close, for LRU eviction.
//   - Close may race any other call on the handle: that call completes as
//     before the close or returns ErrClosed, and leaves no descriptor, lock
//     or pin behind (lifecycle.go); calls after Close return ErrClosed, and
//     Stats the counters as they were. Save racing Close may return
//     ErrClosed without having synced: Close does not fsync.
//   - A handle opened lazily holds only the chunks its finds needed; Stats
//     reads the rest of the file first, so that its Entries and MemBytes
//     count the whole file (it then costs what Open cost before the index).
//   - A chunk is checked against the index when it is decoded, not before.
//     Until a handle reads the file whole, an index forged with valid
//     checksums (consistent, but false about a chunk not yet decoded) can
//     hide keys of that chunk, or that a later chunk repeats a key: a find
//     then misses, or returns another value the file holds for that key in
//     that scope, never another key's or another scope's. Whoever can write
//     such a file could as well have written those values. Damage never
//     does this: it breaks a checksum.
package cache
