package main

import (
	"fmt"

	"github.com/convcache/convcache/cache"
)

// compact rewrites the file with every entry it holds (and nothing else: no
// damage, no eviction) under the lock.
func runCompact(e *env, args []string) error {
	fl := newFlags(e, "compact")
	timeout := lockTimeout(fl)
	pos, err := parse(fl, args)
	if err != nil {
		return err
	}
	path, err := cachePath(fl, pos)
	if err != nil {
		return err
	}
	before, err := e.readCache(path, "reading "+path)
	if err != nil {
		return err
	}
	if err := cache.Rewrite(path, *timeout, func(in []cache.Entry) ([]cache.Entry, error) { return in, nil }); err != nil {
		return err
	}
	after, err := cache.ReadFile(path)
	if err != nil {
		return err
	}
	var damaged int64
	for _, d := range before.Damage {
		damaged += d.Length
	}
	fmt.Fprintf(e.stdout, "compacted %s: %s -> %s; %d entries in %d scope(s)", path, bytesText(before.Size), bytesText(after.Size),
		len(after.Entries()), len(after.Scopes()))
	if damaged > 0 {
		fmt.Fprintf(e.stdout, "; dropped %s of damaged records", bytesText(damaged))
	}
	fmt.Fprintln(e.stdout)
	return nil
}
