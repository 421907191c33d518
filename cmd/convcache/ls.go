package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/cudnn"
)

// entryJSON is one entry as ls and dump print it with --json.
type entryJSON struct {
	Scope      string    `json:"scope"`
	ScopeHash  string    `json:"scope_hash"`
	Layout     string    `json:"layout,omitempty"`
	Name       string    `json:"name,omitempty"`
	Op         string    `json:"op,omitempty"`
	Key        string    `json:"key"`
	Value      string    `json:"value"`
	TimeMs     *float64  `json:"time_ms,omitempty"`
	KeyBytes   int       `json:"key_bytes"`
	ValueBytes int       `json:"value_bytes"`
	Inserted   time.Time `json:"inserted"`
	Used       time.Time `json:"used"`

	// dump only
	KeyHex   string         `json:"key_hex,omitempty"`
	ValueHex string         `json:"value_hex,omitempty"`
	Params   *cudnn.Params  `json:"params,omitempty"`
	FindKey  *cudnn.FindKey `json:"find_key,omitempty"`
	Perfs    []cudnn.Perf   `json:"perfs,omitempty"`
}

// lsHexMax is how much of an undecoded key or value ls shows.
const lsHexMax = 32

func runLs(e *env, args []string) error { return list(e, "ls", args, false) }

func list(e *env, name string, args []string, full bool) error {
	fl := newFlags(e, name)
	asJSON := fl.Bool("json", false, "print a JSON array")
	var scopes strList
	fl.Var(&scopes, "scope", "only this scope: a name, current, or #HASH (repeatable)")
	pos, err := parse(fl, args)
	if err != nil {
		return err
	}
	path, err := cachePath(fl, pos)
	if err != nil {
		return err
	}
	filter, err := newScopeFilter(scopes)
	if err != nil {
		return err
	}
	var entries []cache.Entry
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(e.stderr, "convcache %s: %s does not exist yet: nothing cached\n", name, path)
	} else {
		f, err := e.readCache(path, "reading "+path)
		if err != nil {
			return err
		}
		for _, d := range f.Corrupt() {
			fmt.Fprintf(e.stderr, "convcache %s: warning: %s: corrupt record at offset %d (%d bytes) skipped; run convcache verify\n", name, path, d.Offset, d.Length)
		}
		for _, en := range f.Entries() {
			if filter.match(en.ScopeHash) {
				entries = append(entries, en)
			}
		}
	}
	hexMax := lsHexMax
	if full {
		hexMax = 0
	}
	if *asJSON {
		out := make([]entryJSON, 0, len(entries))
		for _, en := range entries {
			out = append(out, toJSON(en, hexMax, full))
		}
		return writeJSON(e.stdout, out)
	}
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	now := time.Now()
	for i, en := range entries {
		if i == 0 || en.ScopeHash != entries[i-1].ScopeHash {
			n := 0
			for _, x := range entries[i:] {
				if x.ScopeHash != en.ScopeHash {
					break
				}
				n++
			}
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "scope %s (%s)\n", scopeLabel(en.Scope, en.ScopeHash), plural(n, "entry", "entries"))
		}
		d := describe(en.Key, en.Value, hexMax)
		if !full {
			fmt.Fprintf(w, "  %s\n", d.line())
			continue
		}
		printEntry(w, now, en, &d)
	}
	return nil
}

func toJSON(en cache.Entry, hexMax int, full bool) entryJSON {
	d := describe(en.Key, en.Value, hexMax)
	j := entryJSON{
		Scope: en.Scope, ScopeHash: hashText(en.ScopeHash), Layout: d.Layout, Name: d.Name,
		Key: d.Key, Value: d.Value, KeyBytes: len(en.Key), ValueBytes: len(en.Value),
		Inserted: en.Inserted, Used: en.Used,
	}
	if d.Op != 0 {
		j.Op = d.Op.String()
	}
	if t, ok := d.bestTime(); ok && d.known() {
		j.TimeMs = &t
	}
	if full {
		j.KeyHex, j.ValueHex = hex.EncodeToString(en.Key), hex.EncodeToString(en.Value)
		j.Params, j.FindKey, j.Perfs = d.Params, d.FindKey, d.Perfs
	}
	return j
}
