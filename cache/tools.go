package cache

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/lock"
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
	// Tail marks damage that runs to the end of the file: an append cut
	// short by a crash, or one still being written. It loses nothing that
	// was acknowledged and the next writer removes it. Damage elsewhere is
	// a corrupt record.
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
	Created       time.Time // when this file was written: the last compaction
	Size          int64
	SnapshotBytes int64 // compacted snapshot (after the header)
	JournalBytes  int64 // records appended since
	Frames        int   // valid records
	Damage        []Damage
	FSType        string
	NetworkFS     bool

	c *contents
}

// ReadFile reads the cache file at path without locking or changing it.
// A file that is not a convcache file, or whose header is damaged, returns
// ErrFormat or ErrCorrupt; damaged records are reported in File.Damage.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, ioErr(err, "read", path, "check the path (convcache stats shows the default)")
	}
	return parseFile(path, data)
}

func parseFile(path string, data []byte) (*File, error) {
	h, err := decodeHeader(data[:min(len(data), headerSize)])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f := &File{Path: path, Version: h.version, Created: h.created, Size: int64(len(data)), c: newContents()}
	snapEnd := int64(headerSize)
	scanFrames(data[headerSize:], headerSize, true, func(fr frame) {
		if fr.typ == frameSnapshot && fr.off == snapEnd {
			snapEnd = fr.off + frameHeader + int64(len(fr.payload))
		}
		f.c.addFrame(fr)
	}, func(d damage) {
		f.c.damaged = append(f.c.damaged, d)
	})
	f.c.applyTouches()
	f.Frames = f.c.frames
	f.SnapshotBytes = snapEnd - headerSize
	f.JournalBytes = f.Size - snapEnd
	for _, d := range f.c.damaged {
		f.Damage = append(f.Damage, Damage{Offset: d.off, Length: d.len, Tail: d.off+d.len == f.Size})
	}
	slices.SortFunc(f.Damage, func(a, b Damage) int { return cmp.Compare(a.Offset, b.Offset) })
	f.FSType, f.NetworkFS = fsTypeOf(dirOf(path))
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
	out := make([]Entry, 0, f.c.live)
	f.c.each(func(e *mrec) {
		out = append(out, Entry{
			Scope:     f.c.names[e.scope],
			ScopeHash: e.scope,
			Key:       e.key,
			Value:     e.value,
			Inserted:  time.UnixMilli(e.inserted),
			Used:      time.UnixMilli(e.used),
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
	f.c.each(func(e *mrec) {
		s := m[e.scope]
		if s == nil {
			s = &ScopeSummary{Name: f.c.names[e.scope], Hash: e.scope}
			m[e.scope] = s
		}
		s.Entries++
		s.Bytes += int64(len(e.key) + len(e.value))
	})
	out := make([]ScopeSummary, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ScopeSummary) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Hash, b.Hash)) })
	return out
}

// Corrupt returns the damage that is not a torn tail: records that fail
// their checksum between good records.
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
	c := newContents()
	for _, e := range entries {
		h := e.ScopeHash
		if h == 0 || e.Scope != "" {
			h = ScopeHash(e.Scope)
		}
		if e.Scope != "" {
			c.names[h] = e.Scope
		}
		ins, used := e.Inserted.UnixMilli(), e.Used.UnixMilli()
		c.put(h, record{key: e.Key, value: e.Value, inserted: ins, used: max(used, ins)})
	}
	return c.encode(created)
}

// DecodeFile parses a file image, as ReadFile does for a file on disk.
func DecodeFile(name string, data []byte) (*File, error) { return parseFile(name, data) }

// ErrNoFile is what Rewrite returns when there is no cache file at path, or
// only an empty one: there is nothing to rewrite, fn is not called and no
// file is created. It is not a failure (a compactor that starts before any
// process has created the file is normal); callers test it with errors.Is.
var ErrNoFile = errors.New("convcache: no cache file yet (missing or empty): nothing to rewrite")

// Rewrite replaces the cache file at path with the entries fn returns,
// holding the file lock (waiting at most timeout) so that no process appends
// meanwhile, and publishing the new file by rename. Processes that have the
// file open pick the new one up on their next miss. fn sees every entry of
// every scope; an error from fn leaves the file unchanged. A symbolic link
// is followed, as Open follows it. A missing or empty file returns
// ErrNoFile.
func Rewrite(path string, timeout time.Duration, fn func([]Entry) ([]Entry, error)) error {
	if noFile(path) {
		return ErrNoFile // before taking the lock: not even a lock file is created
	}
	return rewrite(path, timeout, false, fn)
}

// noFile reports whether path names no file, or an empty one.
func noFile(path string) bool {
	fi, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}

func rewrite(path string, timeout time.Duration, create bool, fn func([]Entry) ([]Entry, error)) error {
	path, err := ResolvePath(path)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	if create {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return ioErr(err, "create the cache directory", filepath.Dir(path), "set CONVCACHE_PATH to a writable location")
		}
	}
	lk, err := lock.New(path + ".lock").Lock(timeout)
	if err != nil {
		if errors.Is(err, lock.ErrTimeout) {
			return fmt.Errorf("%w: %s is held by another process; try again or raise the timeout", ErrLock, path+".lock")
		}
		return ioErr(err, "lock", path+".lock", "check the directory's permissions")
	}
	defer lk.Unlock()
	if !create && noFile(path) {
		return ErrNoFile // removed while this call waited for the lock
	}
	var in []Entry
	if _, err := os.Lstat(path); err == nil || !create {
		f, err := ReadFile(path)
		if err != nil {
			return err
		}
		in = f.Entries()
	}
	out, err := fn(in)
	if err != nil {
		return err
	}
	return replaceFile(osFS{}, path, EncodeFile(out, time.Now()))
}

// WriteNew writes a new cache file holding entries at path, which must not
// exist (an export bundle, a merge result).
func WriteNew(path string, entries []Entry) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%w: %s already exists; remove it or choose another name", ErrInvalid, path)
	}
	return replaceFile(osFS{}, path, EncodeFile(entries, time.Now()))
}
