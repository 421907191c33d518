package main

import (
	"fmt"
	"time"

	"github.com/convcache/convcache/internal/cachefile"
	"github.com/spf13/cobra"
)

func newImportCmd(e *env) *cobra.Command {
	var into string
	var scopes []string
	var timeout *time.Duration
	c := &cobra.Command{
		Use:   "import [--cache PATH] [--scope S]... FILE...",
		Short: "merge bundles into the live cache",
		Long: `Merges bundles (or any cache files) into the live cache, by the same rules as
merge, while other processes use it: it holds the cache's lock while it
merges (writers wait at most their lock timeout, keeping their entries in
memory meanwhile) and publishes the result by rename, so no append is lost
and no reader sees a partial file; open handles pick the new file up on
their next miss. The cache file is created if missing.`,
		RunE: func(c *cobra.Command, args []string) error {
			return runImport(e, c, args, into, scopes, *timeout)
		},
	}
	c.Flags().StringVar(&into, "cache", "", "the live cache `PATH` to import into; without it, the default cache file")
	c.Flags().StringArrayVar(&scopes, "scope", nil, "import only scope `S`: a name, current, or #HASH (repeatable)")
	timeout = lockTimeout(c.Flags())
	return c
}

func runImport(e *env, c *cobra.Command, bundles []string, into string, scopes []string, timeout time.Duration) error {
	if len(bundles) == 0 {
		return argErr(c, "name the bundles to import: convcache import [--cache PATH] FILE...")
	}
	path, err := resolve(into)
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
	var incoming []cachefile.Entry
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
	err = cachefile.Update(path, timeout, func(live []cachefile.Entry) ([]cachefile.Entry, error) {
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
