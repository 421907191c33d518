package cachefile

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/internal/errs"
	"github.com/convcache/convcache/internal/format"
	"github.com/convcache/convcache/internal/safefile"
	"github.com/convcache/convcache/internal/vfs"
)

// Entry is one stored entry as the tools see it.
type Entry struct {
	Scope     string // "" if the file never named the scope
	ScopeHash uint64
	Key       []byte
	Value     []byte
	Inserted  time.Time // when this value was written
	Used      time.Time // the last recorded use (>= Inserted)
}

// Damage is a byte range of a file that held no valid record.
type Damage struct {
	Offset, Length int64
	// Tail marks a torn tail (format.TornTail): at the end of the file,
	// after the snapshot, the start of one journal record with fewer bytes
	// than it claims. It is what an append cut short by a crash leaves, or
	// one still being written; it loses nothing that was acknowledged and
	// the next writer removes it. Any other damage (in the snapshot,
	// wherever it falls, or a complete record that fails its checksum,
	// even the last one) is a corrupt record.
	Tail bool
}

// ScopeSummary counts one scope's entries in a file.
type ScopeSummary struct {
	Name    string
	Hash    uint64
	Entries int
	Bytes   int64 // key and value bytes
}

// File is a read-only view of a whole cache file, every scope. It is what
// the convcache command shows, verifies and rewrites.
type File struct {
	Path          string
	Version       uint32
	Created       time.Time // when this file was written
	Compacted     bool      // written by compaction (Created is then the last compaction)
	Size          int64
	SnapshotBytes int64 // compacted snapshot (after the header)
	JournalBytes  int64 // records appended since
	Frames        int   // valid records
	Damage        []Damage
	FSType        string
	NetworkFS     bool

	c *format.Contents
}

// ReadFile reads the cache file at path without locking or changing it.
// A file that is not a convcache file, or whose header is damaged, returns
// ErrFormat or ErrCorrupt; damaged records are reported in File.Damage.
//
// It reads any regular file the caller names, whoever owns it (to inspect a
// colleague's or a system cache), but follows a symbolic link only as
// ResolvePath does, and refuses anything but a regular file (a FIFO would
// block the read forever) with errs.ErrAccess.
func ReadFile(path string) (*File, error) {
	p, err := ResolvePath(path)
	if err != nil {
		return nil, err
	}
	f, err := safefile.OpenFile(p, os.O_RDONLY, false, safefile.Policy{TrustShared: true}, false)
	if err != nil {
		if errors.Is(err, safefile.ErrRefused) {
			return nil, refusal(err, "not read")
		}
		return nil, errs.IO(err, "read", path, "check the path (convcache stats shows the default)")
	}
	defer f.Close()
	data, err := readAll(f)
	if err != nil {
		return nil, errs.IO(err, "read", path, "")
	}
	return parseFile(path, data)
}

// readAll reads an open file from its start to its end.
func readAll(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, 0, fi.Size())
	buf := bytes.NewBuffer(data)
	_, err = buf.ReadFrom(f)
	return buf.Bytes(), err
}

func parseFile(path string, data []byte) (*File, error) {
	h, err := format.DecodeHeader(data[:min(len(data), format.HeaderSize)])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := format.ReadContents(data, 0)
	f := &File{Path: path, Version: h.Version, Created: h.Created, Size: int64(len(data)), c: c}
	f.Frames = c.Frames
	f.SnapshotBytes = c.SnapEnd - format.HeaderSize
	f.JournalBytes = f.Size - c.SnapEnd
	f.Compacted = h.Flags&format.HeaderCompacted != 0 || f.SnapshotBytes > 0
	for _, d := range c.Damaged {
		f.Damage = append(f.Damage, Damage{Offset: d.Off, Length: d.Len, Tail: c.Torn.Len > 0 && d == c.Torn})
	}
	slices.SortFunc(f.Damage, func(a, b Damage) int { return cmp.Compare(a.Offset, b.Offset) })
	f.FSType, f.NetworkFS = vfs.TypeOf(vfs.OS{}, dirOf(path))
	return f, nil
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[:max(i, 1)]
		}
	}
	return "."
}

// Entries returns every entry of every scope, sorted by scope then key.
func (f *File) Entries() []Entry {
	out := make([]Entry, 0, f.c.Live())
	f.c.Each(func(e *format.Merged) {
		out = append(out, Entry{
			Scope:     f.c.Names[e.Scope],
			ScopeHash: e.Scope,
			Key:       e.Key,
			Value:     e.Value,
			Inserted:  time.UnixMilli(e.Inserted),
			Used:      time.UnixMilli(e.Used),
		})
	})
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.ScopeHash, b.ScopeHash), bytes.Compare(a.Key, b.Key))
	})
	return out
}

// Scopes summarises the file's scopes, sorted by name.
func (f *File) Scopes() []ScopeSummary {
	m := map[uint64]*ScopeSummary{}
	f.c.Each(func(e *format.Merged) {
		s := m[e.Scope]
		if s == nil {
			s = &ScopeSummary{Name: f.c.Names[e.Scope], Hash: e.Scope}
			m[e.Scope] = s
		}
		s.Entries++
		s.Bytes += int64(len(e.Key) + len(e.Value))
	})
	out := make([]ScopeSummary, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ScopeSummary) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Hash, b.Hash)) })
	return out
}

// Corrupt returns the damage that is not a torn tail: records that fail
// their checksum or do not decode, anywhere but in a torn tail.
func (f *File) Corrupt() []Damage {
	var out []Damage
	for _, d := range f.Damage {
		if !d.Tail {
			out = append(out, d)
		}
	}
	return out
}

// ScopeHash returns the hash that identifies a scope name in a file.
func ScopeHash(scope string) uint64 { return xxhash.Sum64String(scope) }

// EncodeFile returns a complete cache file image holding entries (written
// as a compacted snapshot), for tools that build files, such as merge and
// export bundles.
func EncodeFile(entries []Entry, created time.Time) []byte {
	c := format.NewContents(0, 0)
	for _, e := range entries {
		h := e.ScopeHash
		if h == 0 || e.Scope != "" {
			h = ScopeHash(e.Scope)
		}
		if e.Scope != "" {
			c.Names[h] = e.Scope
		}
		ins, used := e.Inserted.UnixMilli(), e.Used.UnixMilli()
		c.Put(h, format.Record{Key: e.Key, Value: e.Value, Inserted: ins, Used: max(used, ins)})
	}
	return c.Encode(created)
}

// DecodeFile parses a file image, as ReadFile does for a file on disk.
func DecodeFile(name string, data []byte) (*File, error) { return parseFile(name, data) }

// BudgetLeft is what reading the file left of its decode budget (16 times
// the file's size plus one maximal chunk, format.Contents). Decoding stops
// before the budget would go negative; tests check that it never does.
func (f *File) BudgetLeft() int64 { return f.c.BudgetLeft() }
