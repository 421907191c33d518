package main

import (
	"fmt"
	"os"

	"github.com/convcache/convcache/internal/cachefile"
	"github.com/spf13/cobra"
)

// A bundle is a cache file: a compacted snapshot, zstd-compressed in chunks,
// each with its CRC-32C, scope names included. Anything that reads a cache
// reads a bundle: import merges it into a live cache, merge combines it, and
// the library can use it as is as the read-only system tier
// (CONVCACHE_SYSTEM_PATH).

func newExportCmd(e *env) *cobra.Command {
	var out string
	var scopes []string
	c := &cobra.Command{
		Use:   "export [PATH] [--scope S]... -o FILE",
		Short: "write a portable bundle of some scopes",
		Long: `Writes the entries of the chosen scopes (default: all) to a new bundle FILE.

A bundle is a cache file: zstd-compressed snapshot chunks, each with its
checksum, scope names included. So a bundle can be verified, listed and
merged like any cache, imported into a live cache (convcache import), and
shipped in a container image as the read-only system tier
(CONVCACHE_SYSTEM_PATH) without importing it.`,
		Args: atMostOnePath,
		RunE: func(c *cobra.Command, args []string) error { return runExport(e, c, args, out, scopes) },
	}
	c.Flags().StringVarP(&out, "output", "o", "", "the bundle to write (it must not exist)")
	c.Flags().StringArrayVar(&scopes, "scope", nil, "export scope `S`: a name, current, or #HASH (repeatable; default every scope)")
	return c
}

func runExport(e *env, c *cobra.Command, args []string, out string, scopes []string) error {
	if out == "" {
		return argErr(c, "name the bundle to write with -o FILE")
	}
	path, err := cachePath(args)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(out); err == nil {
		return usageErr("%s already exists: remove it or choose another name", out)
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
	var sel []cachefile.Entry
	for _, en := range all {
		if filter.match(en.ScopeHash) {
			sel = append(sel, en)
		}
	}
	if len(sel) == 0 {
		return usageErr("%s has no entries of %s: nothing to export; its scopes are %s", path, filter, scopeList(all))
	}
	if err := cachefile.WriteNew(out, sel); err != nil {
		return err
	}
	var size int64
	if fi, err := os.Stat(out); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(e.stdout, "exported %d entries of %d scope(s) from %s to %s (%s); use it with convcache import, or as CONVCACHE_SYSTEM_PATH\n",
		len(sel), countScopes(sel), path, out, bytesText(size))
	return nil
}
