package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/convcache/convcache/internal/cachefile"
	"github.com/spf13/cobra"
)

// nothingToCompact says why the file at path needs no compaction
// (notCreatedYet, "is empty"), or "" when it may: the message for what
// cachefile.Rewrite reports as ErrNoFile, told before the file is read.
func nothingToCompact(path string) string {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return notCreatedYet
	case err == nil && fi.Mode().IsRegular() && fi.Size() == 0:
		return "is empty"
	}
	return ""
}

// compact rewrites the file with every entry it holds (and nothing else: no
// damage, no eviction) under the lock.
func newCompactCmd(e *env) *cobra.Command {
	var timeout *time.Duration
	c := &cobra.Command{
		Use:   "compact [PATH] [--lock-timeout D]",
		Short: "rewrite the file as a snapshot under the lock",
		Long: `Rewrites the file as a snapshot holding every entry, under the cache's lock,
and publishes it by rename: processes using the file carry on and pick the
new file up on their next miss. Damaged records and torn tails are dropped;
the damaged records' bytes are kept first in FILE.damaged-TIMESTAMP, beside
the file, with its mode and group (each damaged range at its offset in the
old file, holes elsewhere; the newest 3 such files are kept, older ones are
removed). Nothing is evicted (that is prune's job).

The default cache file not created yet, or a file that holds no records,
is nothing to do: compact says so and exits 0 (a compactor that runs
before any writer is normal). A PATH that does not exist is an error.`,
		Args: atMostOnePath,
		RunE: func(c *cobra.Command, args []string) error { return runCompact(e, args, *timeout) },
	}
	timeout = lockTimeout(c.Flags())
	return c
}

func runCompact(e *env, args []string, timeout time.Duration) error {
	path, err := cachePath(args)
	if err != nil {
		return err
	}
	if why := nothingToCompact(path); why != "" {
		fmt.Fprintf(e.stdout, "%s %s; nothing to compact\n", path, why)
		return nil
	}
	before, err := e.readCache(path, "reading "+path)
	if err != nil {
		return err
	}
	if before.Frames == 0 && len(before.Damage) == 0 {
		fmt.Fprintf(e.stdout, "%s holds no records: nothing to compact\n", path)
		return nil
	}
	err = cachefile.Rewrite(path, timeout, func(in []cachefile.Entry) ([]cachefile.Entry, error) { return in, nil })
	if errors.Is(err, cachefile.ErrNoFile) { // removed or emptied meanwhile
		fmt.Fprintf(e.stdout, "%s is gone or empty: nothing to compact\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	after, err := cachefile.ReadFile(path)
	if err != nil {
		return err
	}
	var damaged, torn int64
	for _, d := range before.Damage {
		if d.Tail {
			torn += d.Length
		} else {
			damaged += d.Length
		}
	}
	fmt.Fprintf(e.stdout, "compacted %s: %s -> %s; %d entries in %d scope(s)", path, bytesText(before.Size), bytesText(after.Size),
		len(after.Entries()), len(after.Scopes()))
	if damaged > 0 {
		var kept []string
		if real, err := cachefile.ResolvePath(path); err == nil {
			kept = cachefile.DamagedFiles(real)
		}
		fmt.Fprintf(e.stdout, "; dropped %s of damaged records", bytesText(damaged))
		if len(kept) > 0 {
			fmt.Fprintf(e.stdout, " (kept in %s)", kept[len(kept)-1])
		}
	}
	if torn > 0 {
		fmt.Fprintf(e.stdout, "; removed a torn tail of %s", bytesText(torn))
	}
	fmt.Fprintln(e.stdout)
	return nil
}
