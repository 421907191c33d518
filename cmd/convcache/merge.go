package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/convcache/convcache/internal/cachefile"
	"github.com/spf13/cobra"
)

// What merging one entry into others did.
type outcome int

const (
	added    outcome = iota // a key no earlier source had
	same                    // an equal value was there already
	replaced                // a conflict the new entry won
	kept                    // a conflict the earlier entry won
)

// merger combines entries from several sources. Where two sources hold
// different values for one key of one scope, the faster measured time wins
// when both values are decoded perf results (cudnn codecs), else the entry
// inserted later wins (on a tie, the later source).
type merger struct {
	slots     map[string]*slot
	order     []string
	conflicts []conflict
}

type slot struct {
	e    cachefile.Entry
	from string
}

type conflict struct {
	Scope   string
	Key     string
	Kept    string // source of the value kept
	KeptV   string
	Dropped string
	DropV   string
	Reason  string
}

func newMerger() *merger { return &merger{slots: map[string]*slot{}} }

func entryID(e cachefile.Entry) string {
	return strconv.FormatUint(e.ScopeHash, 16) + "/" + string(e.Key)
}

func (m *merger) add(e cachefile.Entry, from string) outcome {
	id := entryID(e)
	s, ok := m.slots[id]
	if !ok {
		m.slots[id] = &slot{e, from}
		m.order = append(m.order, id)
		return added
	}
	a := &s.e
	if a.Scope == "" {
		a.Scope = e.Scope
	}
	if e.Scope == "" {
		e.Scope = a.Scope
	}
	used := a.Used
	if e.Used.After(used) {
		used = e.Used
	}
	if bytes.Equal(a.Value, e.Value) {
		if e.Inserted.Before(a.Inserted) {
			a.Inserted = e.Inserted
		}
		a.Used = used
		return same
	}
	newWins, reason := decide(*a, e)
	da, db := describe(a.Key, a.Value, lsHexMax), describe(e.Key, e.Value, lsHexMax)
	c := conflict{Scope: scopeLabel(e.Scope, e.ScopeHash), Key: db.Key, Reason: reason}
	if newWins {
		c.Kept, c.KeptV, c.Dropped, c.DropV = from, db.Value, s.from, da.Value
		s.e, s.from = e, from
	} else {
		c.Kept, c.KeptV, c.Dropped, c.DropV = s.from, da.Value, from, db.Value
	}
	s.e.Used = used
	m.conflicts = append(m.conflicts, c)
	if newWins {
		return replaced
	}
	return kept
}

// decide reports whether b should replace a, and why.
func decide(a, b cachefile.Entry) (bool, string) {
	da, db := describe(a.Key, a.Value, 0), describe(b.Key, b.Value, 0)
	if da.known() && db.known() {
		ta, oka := da.bestTime()
		tb, okb := db.bestTime()
		switch {
		case oka && okb && ta != tb:
			return tb < ta, fmt.Sprintf("faster measured time (%.4g ms vs %.4g ms)", min(ta, tb), max(ta, tb))
		case oka && !okb:
			return false, "the other value has no successful measurement"
		case okb && !oka:
			return true, "the other value has no successful measurement"
		}
	}
	if a.Inserted.After(b.Inserted) {
		return false, "newer entry (value layout unknown or times equal)"
	}
	return true, "newer entry (value layout unknown or times equal)"
}

func (m *merger) entries() []cachefile.Entry {
	out := make([]cachefile.Entry, 0, len(m.order))
	for _, id := range m.order {
		out = append(out, m.slots[id].e)
	}
	return out
}

func printConflicts(w io.Writer, cs []conflict) {
	for _, c := range cs {
		fmt.Fprintf(w, "conflict: scope %s: %s\n  kept    %s (%s)\n  dropped %s (%s)\n  because %s\n",
			c.Scope, c.Key, c.KeptV, c.Kept, c.DropV, c.Dropped, c.Reason)
	}
}

// readInputs reads cache files or bundles, warning about damaged records
// (their entries are lost; the rest are used).
func (e *env) readInputs(cmd string, paths []string) ([]*cachefile.File, error) {
	var out []*cachefile.File
	for _, p := range paths {
		rp, err := cachefile.ResolvePath(p)
		if err != nil {
			return nil, err
		}
		f, err := e.readCache(rp, "reading "+p)
		if err != nil {
			return nil, err
		}
		if c := f.Corrupt(); len(c) > 0 {
			fmt.Fprintf(e.stderr, "convcache %s: warning: %s has %d corrupt record(s) (first at offset %d); their entries are left out (convcache verify %s)\n",
				cmd, p, len(c), c[0].Offset, p)
		}
		out = append(out, f)
	}
	return out, nil
}

func newMergeCmd(e *env) *cobra.Command {
	var out string
	var scopes []string
	c := &cobra.Command{
		Use:   "merge A B... -o OUT [--scope S]...",
		Short: "combine cache files into a new one",
		Long: `Combines cache files (or bundles) into a new file OUT, which must not exist.

Where two files hold different values for one key of one scope, the value
with the faster measured time is kept when both are decoded cuDNN perf
results (a failed measurement never wins), and the entry inserted later
otherwise. Each conflict is printed with both values, where each came from,
and why one was kept.`,
		RunE: func(c *cobra.Command, args []string) error { return runMerge(e, c, args, out, scopes) },
	}
	c.Flags().StringVarP(&out, "output", "o", "", "the new cache file to write (it must not exist)")
	c.Flags().StringArrayVar(&scopes, "scope", nil, "only scope `S`: a name, current, or #HASH (repeatable)")
	return c
}

func runMerge(e *env, c *cobra.Command, inputs []string, out string, scopes []string) error {
	if out == "" || len(inputs) == 0 {
		return argErr(c, "give the inputs and the output: convcache merge A B... -o OUT")
	}
	if _, err := os.Lstat(out); err == nil {
		return usageErr("%s already exists: merge writes a new file; remove it, choose another name, or use convcache import to merge into an existing cache", out)
	}
	filter, err := newScopeFilter(scopes)
	if err != nil {
		return err
	}
	files, err := e.readInputs("merge", inputs)
	if err != nil {
		return err
	}
	m := newMerger()
	counts := map[outcome]int{}
	for i, f := range files {
		for _, en := range f.Entries() {
			if filter.match(en.ScopeHash) {
				counts[m.add(en, inputs[i])]++
			}
		}
	}
	all := m.entries()
	if err := cachefile.WriteNew(out, all); err != nil {
		return err
	}
	printConflicts(e.stdout, m.conflicts)
	fi, _ := os.Stat(out)
	var size int64
	if fi != nil {
		size = fi.Size()
	}
	fmt.Fprintf(e.stdout, "merged %d file(s) into %s: %d entries in %d scope(s), %s; %d held by several files with equal values, %d conflict(s)\n",
		len(files), out, len(all), countScopes(all), bytesText(size), counts[same], len(m.conflicts))
	return nil
}

func countScopes(es []cachefile.Entry) int {
	s := map[uint64]bool{}
	for _, e := range es {
		s[e.ScopeHash] = true
	}
	return len(s)
}
