package cache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"
)

// contents is every entry of every scope in one file image, merged: the
// last write of a key wins, and use times include touch frames. It is what
// compaction and the tools work on.
type contents struct {
	names   map[uint64]string // scope hash -> name ("" if never named)
	entries map[string]*mrec  // scope hash (8 bytes) + key -> entry
	touches map[[2]uint64]int64
	damaged []damage
	frames  int
	scratch []byte
}

type mrec struct {
	scope uint64
	record
}

func newContents() *contents {
	return &contents{
		names:   map[uint64]string{},
		entries: map[string]*mrec{},
		touches: map[[2]uint64]int64{},
	}
}

func entryID(scope uint64, key []byte) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], scope)
	return string(b[:]) + string(key)
}

// put records a write. Later writes replace earlier ones. The slices must
// stay valid as long as c.
func (c *contents) put(scope uint64, r record) {
	id := entryID(scope, r.key)
	if old, ok := c.entries[id]; ok {
		r.used = max(r.used, old.used)
	}
	r.used = max(r.used, r.inserted)
	c.entries[id] = &mrec{scope, r}
}

// addFrame folds one frame in.
func (c *contents) addFrame(f frame) {
	c.frames++
	switch f.typ {
	case framePut:
		if p, ok := decodePut(f.payload); ok {
			c.put(p.scope, record{key: p.key, value: p.value, inserted: p.time, used: p.time})
		} else {
			c.damaged = append(c.damaged, damage{f.off, int64(len(f.payload)) + frameHeader})
		}
	case frameScope:
		if h, name, ok := decodeScope(f.payload); ok {
			c.names[h] = name
		}
	case frameTouch:
		if len(f.payload) >= 16 {
			scope := binary.LittleEndian.Uint64(f.payload)
			t := int64(binary.LittleEndian.Uint64(f.payload[8:]))
			for p := f.payload[16:]; len(p) >= 8; p = p[8:] {
				k := [2]uint64{scope, binary.LittleEndian.Uint64(p)}
				c.touches[k] = max(c.touches[k], t)
			}
		}
	case frameSnapshot:
		// Decode into a fresh buffer: the records alias it.
		scope, recs, _, err := decodeSnapshot(f, nil, nil)
		if err != nil {
			c.damaged = append(c.damaged, damage{f.off, int64(len(f.payload)) + frameHeader})
			return
		}
		head, _ := decodeSnapshotHead(f.payload)
		if scope != "" || c.names[head.scopeHash] == "" {
			c.names[head.scopeHash] = scope
		}
		for _, r := range recs {
			c.put(head.scopeHash, r)
		}
	}
}

// readContents parses a whole file image. The header must already be valid.
func readContents(buf []byte) *contents {
	c := newContents()
	scanFrames(buf[headerSize:], headerSize, true, c.addFrame, func(d damage) {
		c.damaged = append(c.damaged, d)
	})
	c.applyTouches()
	return c
}

func (c *contents) applyTouches() {
	if len(c.touches) == 0 {
		return
	}
	for _, e := range c.entries {
		if t, ok := c.touches[[2]uint64{e.scope, xxhash.Sum64(e.key)}]; ok {
			e.used = max(e.used, t)
		}
	}
	clear(c.touches)
}

func recBytes(e *mrec) int64 { return int64(len(e.key) + len(e.value) + 16) }

// evict removes the least recently used entries until the contents are
// below 90% of each bound that is exceeded. It returns how many it removed.
func (c *contents) evict(maxEntries, maxBytes int64) int {
	n := int64(len(c.entries))
	var size int64
	for _, e := range c.entries {
		size += recBytes(e)
	}
	if (maxEntries <= 0 || n <= maxEntries) && (maxBytes <= 0 || size <= maxBytes) {
		return 0
	}
	targetN, targetB := n, size
	if maxEntries > 0 && n > maxEntries {
		targetN = maxEntries * 9 / 10
	}
	if maxBytes > 0 && size > maxBytes {
		targetB = maxBytes * 9 / 10
	}
	ids := make([]string, 0, len(c.entries))
	for id := range c.entries {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		ea, eb := c.entries[a], c.entries[b]
		return cmp.Or(cmp.Compare(ea.used, eb.used), cmp.Compare(ea.inserted, eb.inserted), cmp.Compare(a, b))
	})
	evicted := 0
	for _, id := range ids {
		if n <= targetN && size <= targetB {
			break
		}
		size -= recBytes(c.entries[id])
		n--
		delete(c.entries, id)
		evicted++
	}
	return evicted
}

// encode writes a complete file image: a header and one run of snapshot
// chunks per scope, keys sorted so that similar keys compress together.
func (c *contents) encode(created time.Time) []byte {
	byScope := map[uint64][]*mrec{}
	for _, e := range c.entries {
		byScope[e.scope] = append(byScope[e.scope], e)
	}
	scopes := make([]uint64, 0, len(byScope))
	for s := range byScope {
		scopes = append(scopes, s)
	}
	slices.Sort(scopes)
	out := encodeHeader(created)
	var recs []record
	for _, s := range scopes {
		es := byScope[s]
		slices.SortFunc(es, func(a, b *mrec) int { return bytes.Compare(a.key, b.key) })
		recs = recs[:0]
		for _, e := range es {
			recs = append(recs, e.record)
		}
		out, c.scratch = appendSnapshotFrames(out, s, c.names[s], recs, c.scratch)
	}
	return out
}

// compact rewrites the file as a snapshot of every scope's current entries,
// evicting the least recently used beyond the bounds. The caller holds the
// file lock (so no process appends meanwhile) but not mu.
//
// The new file is written beside the old one, synced, renamed over it and
// the directory synced: a crash at any point leaves either the old file or
// the new one, never a mix. The old file is never truncated or rewritten.
func (c *Cache) compact() error {
	f, err := c.fs.OpenFile(c.path, os.O_RDONLY, 0)
	if err != nil {
		return ioErr(err, "open", c.path, "")
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return ioErr(err, "stat", c.path, "")
	}
	buf := make([]byte, fi.Size())
	_, err = f.ReadAt(buf, 0)
	f.Close()
	if err != nil {
		return ioErr(err, "read", c.path, "")
	}
	if _, err := decodeHeader(buf[:min(len(buf), headerSize)]); err != nil {
		return err // never replace a file we cannot read
	}
	all := readContents(buf)

	// Fold in this handle's recent hits and unwritten entries.
	now := time.Now()
	ms := now.UnixMilli()
	c.mu.Lock()
	g := c.gen.Load()
	c.idx.Load().each(func(ch []byte, off int) {
		if atomicLoad32(ch, off+8) == g {
			if e, ok := all.entries[entryID(c.scopeHash, entryKey(ch, off))]; ok {
				e.used = max(e.used, ms)
			}
		}
	})
	c.gen.Store(g + 1)
	written := make(map[string][]byte, len(c.pending))
	for k, v := range c.pending {
		written[k] = v
		all.put(c.scopeHash, record{key: []byte(k), value: v, inserted: ms, used: ms})
	}
	if all.names[c.scopeHash] == "" {
		all.names[c.scopeHash] = c.scope
	}
	c.mu.Unlock()

	evicted := all.evict(c.opts.MaxEntries, c.opts.MaxBytes)
	image := all.encode(now)
	if err := replaceFile(c.fs, c.path, image); err != nil {
		return err
	}
	c.st.compactions.Add(1)
	if c.vlevel >= LogAll {
		c.logEvent("compact", nil, time.Since(now), fmt.Sprintf("entries=%d bytes=%d->%d", len(all.entries), len(buf), len(image)))
		if evicted > 0 {
			c.logEvent("evict", nil, 0, fmt.Sprintf("entries=%d", evicted))
		}
	}
	c.st.evictions.Add(uint64(evicted))

	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range written {
		if cur, ok := c.pending[k]; ok && bytes.Equal(cur, v) {
			delete(c.pending, k)
		}
	}
	// What this handle appended is in the new, synced file.
	for _, uf := range c.unsynced {
		uf.Close()
	}
	c.unsynced, c.dirty = nil, false
	return c.reopen(true)
}
