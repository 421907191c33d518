package format

import (
	"bytes"
	"cmp"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Contents is every entry of every scope in one file image, merged: the
// last write of a key wins, and use times include touch frames. It is what
// compaction and the tools work on.
//
// It is built for a file of millions of entries: records sit in one slice
// (their keys and values alias the file image or the decoded snapshot
// chunks; nothing is copied), found through a map from (scope, key hash) to
// the first record with that hash, the rest chained. About 110 bytes per
// entry besides the image, where a map keyed by scope and key strings took
// about 250.
type Contents struct {
	Names   map[uint64]string // scope hash -> name ("" if never named)
	recs    []Merged
	byHash  map[[2]uint64]int32 // (scope hash, key hash) -> index of the first such record
	live    int                 // records not evicted
	touches map[[2]uint64]int64
	Damaged []Damage // every damaged region, a torn tail included
	Torn    Damage   // the torn tail (TornTail) if Len > 0: not damage
	Frames  int
	End     int64   // offset after the last valid frame
	SnapEnd int64   // where the snapshot ends: the index's end, else the run of snapshot and pad frames
	budget  Budget  // what is left to decode
	dec     Decoder // keeps decoded chunks: the records alias them
	scratch []byte  // encoding scratch
	only    *uint64 // decode only this scope's snapshot chunks (ReadContentsOf)
}

type Merged struct {
	Scope   uint64
	KeyHash uint64
	Record
	next int32 // next record with the same scope and key hash, or -1
	dead bool  // evicted
}

// NewContents returns empty contents that may decode a file of fileBytes
// bytes (see Budget), for about n entries: a slice and map that never
// grow spare no copies in a compaction of millions. n is a hint; it is
// capped by what the file's bytes can hold.
func NewContents(fileBytes int64, n int) *Contents {
	n = int(min(int64(n), fileBytes*ExpandFactor/MinRecordCost+1024))
	return &Contents{
		Names:   map[uint64]string{},
		recs:    make([]Merged, 0, n),
		byHash:  make(map[[2]uint64]int32, n),
		touches: map[[2]uint64]int64{},
		budget:  NewBudget(fileBytes),
	}
}

// Find returns the record of (scope, key), or nil.
func (c *Contents) Find(scope, khash uint64, key []byte) *Merged {
	i, ok := c.byHash[[2]uint64{scope, khash}]
	for ok && i >= 0 {
		if bytes.Equal(c.recs[i].Key, key) {
			return &c.recs[i]
		}
		i = c.recs[i].next
	}
	return nil
}

// Put records a write. Later writes replace earlier ones. The slices must
// stay valid as long as c.
func (c *Contents) Put(scope uint64, r Record) {
	kh := xxhash.Sum64(r.Key)
	r.Used = max(r.Used, r.Inserted)
	if e := c.Find(scope, kh, r.Key); e != nil {
		r.Used = max(r.Used, e.Used)
		e.Record = r
		return
	}
	id := [2]uint64{scope, kh}
	head, ok := c.byHash[id]
	if !ok {
		head = -1
	}
	c.recs = append(c.recs, Merged{Scope: scope, KeyHash: kh, Record: r, next: head})
	c.byHash[id] = int32(len(c.recs) - 1)
	c.live++
}

// Live returns how many records were not evicted.
func (c *Contents) Live() int { return c.live }

// BudgetLeft returns what is left of the decode budget (see Budget).
func (c *Contents) BudgetLeft() int64 { return c.budget.left }

// Each calls fn for every record that was not evicted.
func (c *Contents) Each(fn func(e *Merged)) {
	for i := range c.recs {
		if !c.recs[i].dead {
			fn(&c.recs[i])
		}
	}
}

// Add folds one frame in.
func (c *Contents) Add(f Frame) {
	c.Frames++
	c.End = f.End()
	if c.dec.Budget == nil {
		c.dec = Decoder{Budget: &c.budget, Keep: true}
	}
	c.dec.Frame(f, merger{c})
}

// merger is Contents as a Visitor: every scope, use times from touches.
type merger struct{ c *Contents }

func (m merger) Put(scope uint64, r Record)  { m.c.Put(scope, r) }
func (m merger) Scope(h uint64, name string) { m.c.Names[h] = name }
func (m merger) Chunk(s uint64) bool         { return m.c.only == nil || *m.c.only == s }
func (m merger) Damaged(d Damage)            { m.c.Damaged = append(m.c.Damaged, d) }
func (m merger) Touch(scope uint64, t int64, keyHash uint64) {
	k := [2]uint64{scope, keyHash}
	m.c.touches[k] = max(m.c.touches[k], t)
}

// ReadContents parses a whole file image, with a hint of its entries: n.
// The header must already be valid.
func ReadContents(buf []byte, n int) *Contents {
	c := NewContents(int64(len(buf)), n)
	c.read(buf)
	return c
}

// ReadContentsOf is ReadContents for one scope's reader: it decodes only
// the snapshot chunks of that scope, as the engine does, so that other
// scopes' chunks do not spend the decode budget. It is what a handle of
// that scope must find in buf (tests use it as their oracle).
func ReadContentsOf(buf []byte, scope uint64) *Contents {
	c := NewContents(int64(len(buf)), 0)
	c.only = &scope
	c.read(buf)
	return c
}

// read scans a whole file image into c: every frame, the damage (not
// declared across the snapshot's end: ScanFile), the snapshot's end and the
// torn tail if there is one.
func (c *Contents) read(buf []byte) {
	end, indexed := IndexedEnd(buf)
	if !indexed {
		end = HeaderSize
	}
	run := int64(HeaderSize)
	last := Damage{Off: -1}
	ScanFile(buf[HeaderSize:], HeaderSize, end, true, func(f Frame) {
		if ExtendsSnapshot(f, run) {
			run = f.End()
		}
		c.Add(f)
	}, func(d Damage) {
		c.Damaged = append(c.Damaged, d)
		last = d
	})
	c.SnapEnd = run
	if indexed {
		c.SnapEnd = end
	}
	if last.Off >= 0 && last.Off+last.Len == int64(len(buf)) && TornTail(last, c.SnapEnd, buf[last.Off:]) {
		c.Torn = last
	}
	c.ApplyTouches()
}

// Corrupt returns the damage that is not the torn tail: what a rewrite
// drops and keeps beside the file (see cache/doc.go).
func (c *Contents) Corrupt() []Damage {
	var out []Damage
	for _, d := range c.Damaged {
		if c.Torn.Len == 0 || d != c.Torn {
			out = append(out, d)
		}
	}
	return out
}

// ApplyTouches folds the touch frames added so far into the records' use
// times. ReadContents does it; a caller that adds frames itself calls it
// after the last one.
func (c *Contents) ApplyTouches() {
	if len(c.touches) == 0 {
		return
	}
	c.Each(func(e *Merged) {
		if t, ok := c.touches[[2]uint64{e.Scope, e.KeyHash}]; ok {
			e.Used = max(e.Used, t)
		}
	})
	clear(c.touches)
}

func recBytes(e *Merged) int64 { return int64(len(e.Key) + len(e.Value) + 16) }

// Evict removes the least recently used entries until the contents are
// below 90% of each bound that is exceeded. It returns how many it removed.
func (c *Contents) Evict(maxEntries, maxBytes int64) int {
	n := int64(c.live)
	var size int64
	c.Each(func(e *Merged) { size += recBytes(e) })
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
		return cmp.Or(cmp.Compare(ea.Used, eb.Used), cmp.Compare(ea.Inserted, eb.Inserted),
			cmp.Compare(ea.Scope, eb.Scope), bytes.Compare(ea.Key, eb.Key))
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

// Encode writes a complete file image: a header, the snapshot index, and
// one run of snapshot chunks per scope, keys sorted so that similar keys
// compress together. Contents without entries have no chunks and no index.
//
// If the chunks would cost a reader more than ExpandFactor times the
// image's size (values that compress extremely well), pad frames follow
// them: a reader's Budget then always covers a file this package
// wrote, and the budget stays a bound on what a hostile file can cost.
func (c *Contents) Encode(created time.Time) []byte {
	byScope := map[uint64][]*Merged{}
	c.Each(func(e *Merged) { byScope[e.Scope] = append(byScope[e.Scope], e) })
	scopes := make([]uint64, 0, len(byScope))
	for s := range byScope {
		scopes = append(scopes, s)
	}
	slices.Sort(scopes)
	// The chunks are encoded first: the index that precedes them lists
	// their lengths.
	var chunks []byte
	var list []IndexedChunk
	var recs []Record
	var cost int64
	for _, s := range scopes {
		es := byScope[s]
		slices.SortFunc(es, func(a, b *Merged) int { return bytes.Compare(a.Key, b.Key) })
		recs = recs[:0]
		for _, e := range es {
			recs = append(recs, e.Record)
		}
		var n int64
		chunks, c.scratch, n = appendSnapshotChunks(chunks, s, c.Names[s], recs, c.scratch, &list)
		cost += n
	}
	out := EncodeHeader(created, HeaderCompacted)
	if len(list) == 0 {
		return AppendPadding(out, (cost+ExpandFactor-1)/ExpandFactor)
	}
	out = slices.Grow(out, len(chunks)+len(chunks)/64+4096)
	out = AppendSnapshotIndex(out, list, 0)
	out = append(out, chunks...)
	out = AppendPadding(out, (cost+ExpandFactor-1)/ExpandFactor)
	setSnapshotEnd(out[HeaderSize:], int64(len(out)))
	return out
}
