package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/convcache/convcache/internal/bytesize"
	"github.com/convcache/convcache/internal/cachefile"
)

// pruneRules say which entries prune removes.
type pruneRules struct {
	only      *scopeFilter  // prune only these scopes (nil: every scope)
	keep      *scopeFilter  // remove the scopes not in it (nil: no such rule)
	olderThan time.Duration // remove entries unused for longer (0: no such rule)
	maxBytes  int64         // then evict LRU until the selected entries fit (-1: no such rule)
}

type removal struct {
	e      cachefile.Entry
	reason string
}

// entryBytes is what an entry counts against --max-bytes, as against
// CONVCACHE_MAX_BYTES: its key and value and 16 bytes of bookkeeping.
func entryBytes(e cachefile.Entry) int64 { return int64(len(e.Key)+len(e.Value)) + 16 }

// prune applies the rules to in and returns what stays and what goes.
func (r *pruneRules) prune(in []cachefile.Entry, now time.Time) ([]cachefile.Entry, []removal) {
	var out []cachefile.Entry
	var gone []removal
	var cand []cachefile.Entry // selected entries that survive the other rules
	var selBytes int64
	for _, e := range in {
		if !r.only.match(e.ScopeHash) {
			out = append(out, e)
			continue
		}
		switch {
		case r.keep == nil && r.olderThan == 0 && r.maxBytes < 0:
			gone = append(gone, removal{e, "its scope was named with --scope"})
		case r.keep != nil && !r.keep.match(e.ScopeHash):
			gone = append(gone, removal{e, "its scope is not kept (--keep-scope)"})
		case r.olderThan > 0 && now.Sub(e.Used) > r.olderThan:
			gone = append(gone, removal{e, "last used " + ageText(now, e.Used)})
		default:
			cand = append(cand, e)
			selBytes += entryBytes(e)
		}
	}
	if r.maxBytes >= 0 && selBytes > r.maxBytes {
		slices.SortStableFunc(cand, func(a, b cachefile.Entry) int {
			return cmp.Or(a.Used.Compare(b.Used), a.Inserted.Compare(b.Inserted))
		})
		i := 0
		for ; i < len(cand) && selBytes > r.maxBytes; i++ {
			selBytes -= entryBytes(cand[i])
			gone = append(gone, removal{cand[i], "least recently used (" + ageText(now, cand[i].Used) + ") beyond --max-bytes"})
		}
		cand = cand[i:]
	}
	return append(out, cand...), gone
}

var errNothingToPrune = errors.New("nothing to prune")

// pruneOptions are prune's flags.
type pruneOptions struct {
	only, keep      []string
	older, maxBytes string
	dry             bool
	timeout         *time.Duration
}

func newPruneCmd(e *env) *cobra.Command {
	var o pruneOptions
	c := &cobra.Command{
		Use:   "prune [PATH] [--scope S]... [--keep-scope S]... [--older-than D] [--max-bytes N] [--dry-run]",
		Short: "remove entries",
		Long: `Removes entries under the cache's lock, and prints each one with the reason.

--scope S limits prune to scope S (alone, it removes that scope);
--keep-scope S removes every other scope (--keep-scope current keeps this
machine's, after a driver or cuDNN upgrade); --older-than D removes entries
not used for D (use is recorded when a process saves or closes its handle);
--max-bytes N then evicts the least recently used entries until the rest take
at most N bytes, counting keys, values and 16 bytes per entry as
CONVCACHE_MAX_BYTES does. --dry-run only prints.`,
		Args: atMostOnePath,
		RunE: func(c *cobra.Command, args []string) error { return runPrune(e, c, args, &o) },
	}
	fs := c.Flags()
	fs.StringArrayVar(&o.only, "scope", nil, "prune only scope `S`: a name, current, or #HASH (repeatable); alone, remove the scope")
	fs.StringArrayVar(&o.keep, "keep-scope", nil, "remove every scope but `S`: a name, current (this machine's), or #HASH (repeatable)")
	fs.StringVar(&o.older, "older-than", "", "remove entries not used for `D`: 90m, 36h, 30d, 2w, 4d12h")
	fs.StringVar(&o.maxBytes, "max-bytes", "", "then evict the least recently used entries until the rest take at most `N` bytes: 512M, 2G")
	fs.BoolVar(&o.dry, "dry-run", false, "print what would be removed; change nothing")
	o.timeout = lockTimeout(fs)
	return c
}

func runPrune(e *env, c *cobra.Command, args []string, o *pruneOptions) error {
	path, err := cachePath(args)
	if err != nil {
		return err
	}
	r := pruneRules{maxBytes: -1}
	if o.older != "" {
		if r.olderThan, err = parseAge(o.older); err != nil || r.olderThan == 0 {
			return argErr(c, "--older-than %q: give a positive duration such as 90m, 36h, 30d or 2w", o.older)
		}
	}
	if o.maxBytes != "" {
		n, ok := bytesize.Parse(o.maxBytes)
		if !ok {
			return argErr(c, "--max-bytes %q: give a size such as 1048576, 512M or 2G", o.maxBytes)
		}
		r.maxBytes = n
	}
	if len(o.only) == 0 && len(o.keep) == 0 && r.olderThan == 0 && r.maxBytes < 0 {
		return argErr(c, "say what to prune: --scope, --keep-scope, --older-than or --max-bytes")
	}
	if r.only, err = newScopeFilter(o.only); err != nil {
		return err
	}
	if r.keep, err = newScopeFilter(o.keep); err != nil {
		return err
	}
	dry, timeout := o.dry, *o.timeout

	now := time.Now()
	var gone []removal
	var left int
	if dry {
		f, err := e.readCache(path, "reading "+path)
		if err != nil {
			return err
		}
		var rest []cachefile.Entry
		rest, gone = r.prune(f.Entries(), now)
		left = len(rest)
	} else {
		if _, err := e.readCache(path, "reading "+path); err != nil {
			return err // a clear message for a missing or foreign file
		}
		err = cachefile.Rewrite(path, timeout, func(in []cachefile.Entry) ([]cachefile.Entry, error) {
			rest, g := r.prune(in, now)
			gone, left = g, len(rest)
			if len(g) == 0 {
				return nil, errNothingToPrune
			}
			return rest, nil
		})
		if err != nil && !errors.Is(err, errNothingToPrune) {
			return err
		}
	}
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	var bytes int64
	for _, g := range gone {
		d := describe(g.e.Key, g.e.Value, lsHexMax)
		bytes += entryBytes(g.e)
		fmt.Fprintf(w, "%s: scope %s: %s (%s)\n", verb, scopeLabel(g.e.Scope, g.e.ScopeHash), d.line(), g.reason)
	}
	if len(gone) == 0 {
		fmt.Fprintf(w, "%s: nothing to prune; %d entries unchanged\n", path, left)
		return nil
	}
	fmt.Fprintf(w, "%s: %s %d entries (%s), %d left\n", path, verb, len(gone), bytesText(bytes), left)
	return nil
}
