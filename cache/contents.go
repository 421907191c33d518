package cache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"
)

// contents is every entry of every scope in one file image, merged: the
// last write of a key wins, and use times include touch frames. It is what
// compaction and the tools work on.
//
// It is built for a file of millions of entries: records sit in one slice
// (their keys and values alias the file image or the decoded snapshot
// chunks; nothing is copied), found through a map from (scope, key hash) to
// the first record with that hash, the rest chained. About 110 bytes per
// entry besides the image, where a map keyed by scope and key strings took
// about 250.
type contents struct {
	names   map[uint64]string // scope hash -> name ("" if never named)
	recs    []mrec
	byHash  map[[2]uint64]int32 // (scope hash, key hash) -> index of the first such record
	live    int                 // records not evicted
	touches map[[2]uint64]int64
	damaged []damage
	frames  int
	end     int64        // offset after the last valid frame
	budget  decodeBudget // what is left to decode
	scratch []byte       // encoding scratch
	zbuf    []byte       // decoding scratch
	chunk   []record     // one chunk's records, before they are merged
}

type mrec struct {
	scope uint64
	khash uint64
	record
	next int32 // next record with the same scope and key hash, or -1
	dead bool  // evicted
}

// newContents returns empty contents that may decode a file of fileBytes
// bytes (see decodeBudget), for about n entries: a slice and map that never
// grow spare no copies in a compaction of millions. n is a hint; it is
// capped by what the file's bytes can hold.
func newContents(fileBytes int64, n int) *contents {
	n = int(min(int64(n), fileBytes*expandFactor/minRecordCost+1024))
	return &contents{
		names:   map[uint64]string{},
		recs:    make([]mrec, 0, n),
		byHash:  make(map[[2]uint64]int32, n),
		touches: map[[2]uint64]int64{},
		budget:  newDecodeBudget(fileBytes),
	}
}

// find returns the record of (scope, key), or nil.
func (c *contents) find(scope, khash uint64, key []byte) *mrec {
	i, ok := c.byHash[[2]uint64{scope, khash}]
	for ok && i >= 0 {
		if bytes.Equal(c.recs[i].key, key) {
			return &c.recs[i]
		}
		i = c.recs[i].next
	}
	return nil
}

// put records a write. Later writes replace earlier ones. The slices must
// stay valid as long as c.
func (c *contents) put(scope uint64, r record) {
	kh := xxhash.Sum64(r.key)
	r.used = max(r.used, r.inserted)
	if e := c.find(scope, kh, r.key); e != nil {
		r.used = max(r.used, e.used)
		e.record = r
		return
	}
	id := [2]uint64{scope, kh}
	head, ok := c.byHash[id]
	if !ok {
		head = -1
	}
	c.recs = append(c.recs, mrec{scope: scope, khash: kh, record: r, next: head})
	c.byHash[id] = int32(len(c.recs) - 1)
	c.live++
}

// each calls fn for every record that was not evicted.
func (c *contents) each(fn func(e *mrec)) {
	for i := range c.recs {
		if !c.recs[i].dead {
			fn(&c.recs[i])
		}
	}
}

// addFrame folds one frame in.
func (c *contents) addFrame(f frame) {
	c.frames++
	c.end = f.off + frameHeader + int64(len(f.payload))
	switch f.typ {
	case framePut:
		if p, ok := decodePut(f.payload); ok {
			c.put(p.scope, record{key: p.key, value: p.value, inserted: p.time, used: p.time})
		} else {
			c.damaged = append(c.damaged, damage{f.off, int64(len(f.payload)) + frameHeader})
		}
	case frameScope:
		if h, name, ok := decodeScope(f.payload); ok && ScopeHash(name) == h {
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
		// Keep each chunk's decoded bytes: the records alias them. The
		// budget bounds how many bytes that can be.
		var scope string
		var err error
		scope, c.chunk, c.zbuf, err = decodeSnapshot(f, c.zbuf, c.chunk[:0], true, &c.budget)
		if err != nil {
			c.damaged = append(c.damaged, damage{f.off, int64(len(f.payload)) + frameHeader})
			return
		}
		head, _ := decodeSnapshotHead(f.payload)
		if scope != "" && ScopeHash(scope) == head.scopeHash {
			c.names[head.scopeHash] = scope
		}
		for _, r := range c.chunk {
			c.put(head.scopeHash, r)
		}
		clear(c.chunk)
	}
}

// readContents parses a whole file image, with a hint of its entries: n.
// The header must already be valid.
func readContents(buf []byte, n int) *contents {
	c := newContents(int64(len(buf)), n)
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
	c.each(func(e *mrec) {
		if t, ok := c.touches[[2]uint64{e.scope, e.khash}]; ok {
			e.used = max(e.used, t)
		}
	})
	clear(c.touches)
}

func recBytes(e *mrec) int64 { return int64(len(e.key) + len(e.value) + 16) }

// evict removes the least recently used entries until the contents are
// below 90% of each bound that is exceeded. It returns how many it removed.
func (c *contents) evict(maxEntries, maxBytes int64) int {
	n := int64(c.live)
	var size int64
	c.each(func(e *mrec) { size += recBytes(e) })
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
	order := make([]int32, 0, c.live)
	for i := range c.recs {
		if !c.recs[i].dead {
			order = append(order, int32(i))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		ea, eb := &c.recs[a], &c.recs[b]
		return cmp.Or(cmp.Compare(ea.used, eb.used), cmp.Compare(ea.inserted, eb.inserted),
			cmp.Compare(ea.scope, eb.scope), bytes.Compare(ea.key, eb.key))
	})
	evicted := 0
	for _, i := range order {
		if n <= targetN && size <= targetB {
			break
		}
		e := &c.recs[i]
		size -= recBytes(e)
		n--
		e.dead = true
		c.live--
		evicted++
	}
	return evicted
}

// encode writes a complete file image: a header and one run of snapshot
// chunks per scope, keys sorted so that similar keys compress together.
//
// If the chunks would cost a reader more than expandFactor times the
// image's size (values that compress extremely well), pad frames follow
// them: a reader's decodeBudget then always covers a file this package
// wrote, and the budget stays a bound on what a hostile file can cost.
func (c *contents) encode(created time.Time) []byte {
	byScope := map[uint64][]*mrec{}
	c.each(func(e *mrec) { byScope[e.scope] = append(byScope[e.scope], e) })
	scopes := make([]uint64, 0, len(byScope))
	for s := range byScope {
		scopes = append(scopes, s)
	}
	slices.Sort(scopes)
	out := encodeHeader(created, headerCompacted)
	var recs []record
	var cost int64
	for _, s := range scopes {
		es := byScope[s]
		slices.SortFunc(es, func(a, b *mrec) int { return bytes.Compare(a.key, b.key) })
		recs = recs[:0]
		for _, e := range es {
			recs = append(recs, e.record)
		}
		var n int64
		out, c.scratch, n = appendSnapshotFrames(out, s, c.names[s], recs, c.scratch)
		cost += n
	}
	return appendPadding(out, (cost+expandFactor-1)/expandFactor)
}
