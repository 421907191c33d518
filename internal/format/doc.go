// Package format is the convcache file format: the header, the frames and
// their codecs (put, scope, touch, snapshot, pad, the snapshot index that
// lets a reader decode one chunk without the others), the scan that finds
// valid frames after damage in linear time, the rule that tells damage from a
// torn tail (tail.go: only an append cut short after the snapshot is one),
// the decode budget that bounds what a hostile file can cost, and the merged
// contents of a whole file that compaction and the offline tools work on.
//
// The format is drawn, with its bounds and what damage costs, in one place:
// the documentation of package cache (cache/doc.go). Everything here works
// on bytes in memory; reading and writing files is the engine's (package
// cache) and the tools' (internal/cachefile).
//
// Every count and length read from a file is a hint, bounded by the bytes
// that carry it: the functions here never trust one further, and never
// panic on any input (FuzzScanFrames).
package format
