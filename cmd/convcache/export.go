package main

import (
	"fmt"
	"os"

	"github.com/convcache/convcache/cache"
)

// A bundle is a cache file: a compacted snapshot, zstd-compressed in chunks,
// each with its CRC-32C, scope names included. Anything that reads a cache
// reads a bundle: import merges it into a live cache, merge combines it, and
// the library can use it as is as the read-only system tier
// (CONVCACHE_SYSTEM_PATH).

func runExport(e *env, args []string) error {
	fl := newFlags(e, "export")
	out := fl.String("o", "", "the bundle to write (must not exist)")
	var scopes strList
	fl.Var(&scopes, "scope", "export this scope: a name, current, or #HASH (repeatable; default every scope)")
	pos, err := parse(fl, args)
	if err != nil {
		return err
	}
	if *out == "" {
		return usageErr("name the bundle to write: convcache export [PATH] --scope S -o FILE")
	}
	path, err := cachePath(fl, pos)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(*out); err == nil {
		return usageErr("%s already exists: remove it or choose another name", *out)
	}
	filter, err := newScopeFilter(scopes)
	if err != nil {
		return err
	}
	f, err := e.readCache(path, "reading "+path)
	if err != nil {
		return err
	}
	if c := f.Corrupt(); len(c) > 0 {
		fmt.Fprintf(e.stderr, "convcache export: warning: %s has %d corrupt record(s) (first at offset %d); their entries are not exported (convcache verify %s)\n",
			path, len(c), c[0].Offset, path)
	}
	all := f.Entries()
	var sel []cache.Entry
	for _, en := range all {
		if filter.match(en.ScopeHash) {
			sel = append(sel, en)
		}
	}
	if len(sel) == 0 {
		return usageErr("%s has no entries of %s: nothing to export; its scopes are %s", path, filter, scopeList(all))
	}
	if err := cache.WriteNew(*out, sel); err != nil {
		return err
	}
	var size int64
	if fi, err := os.Stat(*out); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(e.stdout, "exported %d entries of %d scope(s) from %s to %s (%s); use it with convcache import, or as CONVCACHE_SYSTEM_PATH\n",
		len(sel), countScopes(sel), path, *out, bytesText(size))
	return nil
}
