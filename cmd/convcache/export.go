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

func runImport(e *env, args []string) error {
	fl := newFlags(e, "import")
	into := fl.String("cache", "", "the live cache to import into (default: the default cache file)")
	var scopes strList
	fl.Var(&scopes, "scope", "import only this scope: a name, current, or #HASH (repeatable)")
	timeout := lockTimeout(fl)
	bundles, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(bundles) == 0 {
		return usageErr("name the bundles to import: convcache import [--cache PATH] FILE...")
	}
	path, err := resolve(*into)
	if err != nil {
		return err
	}
	filter, err := newScopeFilter(scopes)
	if err != nil {
		return err
	}
	files, err := e.readInputs("import", bundles)
	if err != nil {
		return err
	}
	var incoming []cache.Entry
	var from []string
	for i, f := range files {
		for _, en := range f.Entries() {
			if filter.match(en.ScopeHash) {
				incoming = append(incoming, en)
				from = append(from, bundles[i])
			}
		}
	}
	if len(incoming) == 0 {
		return usageErr("no entries of %s in %v: nothing to import", filter, bundles)
	}
	// Merge under the cache's lock: writers in other processes wait (at
	// most their lock timeout, keeping their entries in memory meanwhile),
	// and handles that have the file open pick the new one up on their next
	// miss.
	var m *merger
	counts := map[outcome]int{}
	bar := e.progress("importing", int64(len(incoming)))
	bar.count = true
	err = cache.Update(path, *timeout, func(live []cache.Entry) ([]cache.Entry, error) {
		m = newMerger()
		clear(counts)
		for _, en := range live {
			m.add(en, path)
		}
		for i, en := range incoming {
			counts[m.add(en, from[i])]++
			bar.add(1)
		}
		return m.entries(), nil
	})
	bar.finish()
	if err != nil {
		return err
	}
	printConflicts(e.stdout, m.conflicts)
	fmt.Fprintf(e.stdout, "imported %d entries into %s: %d new, %d replaced, %d unchanged, %d kept (the live value won)\n",
		len(incoming), path, counts[added], counts[replaced], counts[same], counts[kept])
	return nil
}
