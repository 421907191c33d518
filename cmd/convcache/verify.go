package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
)

type verifyReport struct {
	Path     string         `json:"path"`
	Exists   bool           `json:"exists"` // false: the default file, not created yet
	OK       bool           `json:"ok"`
	Size     int64          `json:"size"`
	Records  int            `json:"records"`
	Entries  int            `json:"entries"`
	Scopes   int            `json:"scopes"`
	Header   string         `json:"header_error,omitempty"`
	Corrupt  []damageReport `json:"corrupt"`
	TornTail *damageReport  `json:"torn_tail"`
	Problems []string       `json:"problems"`
	Warnings []string       `json:"warnings"`
}

func newVerifyCmd(e *env) *cobra.Command {
	var asJSON, strict bool
	c := &cobra.Command{
		Use:   "verify [PATH] [--strict] [--json]",
		Short: "check every record; exit 1 on damage",
		Long: `Reads every record and checks its CRC-32C, the header and the file's
structure, and prints each damaged range with its offset; exits 1 when it
finds damage.

Damage is anything that fails its check: a bit flipped anywhere in the
snapshot (which compaction writes whole and syncs, so nothing in it can be
cut short), a complete record that fails its checksum (the last one
included), bad bytes followed by valid records, a damaged header. The
entries it held are lost; it stays in the file until a rewrite.

A torn tail is not damage but a warning: at the end of the file, after the
snapshot, the start of one journal record with fewer bytes than it claims.
It is what a writer killed mid-append leaves, or what a writer appending at
this moment looks like; it loses nothing that was acknowledged, and the next
writer removes it. --strict counts it as damage too.

convcache compact drops damage: it rewrites what can still be read, and
keeps the damaged bytes beside the file first, in FILE.damaged-TIMESTAMP
(each damaged range at its offset in the old file, holes elsewhere; the
newest 3 such files are kept).`,
		Args: atMostOnePath,
		RunE: func(c *cobra.Command, args []string) error { return runVerify(e, args, asJSON, strict) },
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&strict, "strict", false, "count a torn tail as damage too")
	return c
}

func runVerify(e *env, args []string, asJSON, strict bool) error {
	path, err := cachePath(args)
	if err != nil {
		return err
	}
	r := verifyReport{Path: path, Corrupt: []damageReport{}, Problems: []string{}, Warnings: []string{}}
	// cachePath let only the default file be missing: nothing cached yet,
	// as ls, stats and compact say.
	_, statErr := os.Stat(path)
	r.Exists = !errors.Is(statErr, fs.ErrNotExist)
	var f *cachefile.File
	if r.Exists {
		f, err = e.readCache(path, "verifying")
	}
	switch {
	case !r.Exists:
	case errors.Is(err, cache.ErrCorrupt):
		// The header itself is damaged: nothing after it can be trusted.
		r.Header = message(err)
		r.Problems = append(r.Problems, fmt.Sprintf("%s: header damaged at offset 0: %s", path, r.Header))
	case err != nil:
		return err
	default:
		checkFile(&r, f, strict)
	}
	r.OK = len(r.Problems) == 0
	if asJSON {
		if err := writeJSON(e.stdout, r); err != nil {
			return err
		}
	} else {
		printVerify(e, &r)
	}
	if !r.OK {
		return quietErr{exitDamage}
	}
	return nil
}

func checkFile(r *verifyReport, f *cachefile.File, strict bool) {
	r.Size, r.Records = f.Size, f.Frames
	for _, d := range f.Damage {
		dr := damageReport{d.Offset, d.Length}
		if d.Tail {
			r.TornTail = &dr
			msg := fmt.Sprintf("%s: torn tail at offset %d (0x%x), %d bytes: an append cut short by a crash, or still being written", r.Path, d.Offset, d.Offset, d.Length)
			if strict {
				r.Problems = append(r.Problems, msg)
			} else {
				r.Warnings = append(r.Warnings, msg+"; it loses nothing acknowledged and the next writer removes it")
			}
			continue
		}
		r.Corrupt = append(r.Corrupt, dr)
		r.Problems = append(r.Problems, fmt.Sprintf("%s: corrupt record at offset %d (0x%x), %d bytes: bad checksum, sync word or length", r.Path, d.Offset, d.Offset, d.Length))
	}
	scopes := f.Scopes()
	r.Scopes = len(scopes)
	for _, s := range scopes {
		r.Entries += s.Entries
		if s.Name == "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: scope %s (%d entries) is never named in the file", r.Path, hashText(s.Hash), s.Entries))
		} else if cachefile.ScopeHash(s.Name) != s.Hash {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: scope %q is recorded under hash %s, but its name hashes to %s", r.Path, s.Name, hashText(s.Hash), hashText(cachefile.ScopeHash(s.Name))))
		}
	}
	for _, en := range f.Entries() {
		if len(en.Key) == 0 || len(en.Key) > cache.MaxKeySize || len(en.Value) > cache.MaxValueSize {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: an entry of scope %s has a %d-byte key and a %d-byte value, outside the limits (%d, %d)",
				r.Path, scopeLabel(en.Scope, en.ScopeHash), len(en.Key), len(en.Value), cache.MaxKeySize, cache.MaxValueSize))
		}
	}
}

func printVerify(e *env, r *verifyReport) {
	w := e.stdout
	for _, p := range r.Problems {
		fmt.Fprintf(w, "damage: %s\n", p)
	}
	for _, x := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", x)
	}
	switch {
	case !r.Exists:
		fmt.Fprintf(w, "%s %s, nothing to verify\n", r.Path, notCreatedYet)
	case r.Header != "":
		fmt.Fprintf(w, "%s: FAILED: the header is damaged; the file cannot be used: move it aside and the next job starts a new one\n", r.Path)
	case !r.OK:
		var lost int64
		for _, d := range r.Corrupt {
			lost += d.Length
		}
		fmt.Fprintf(w, "%s: FAILED: %d problem(s), %s of damaged records; %d entries in %d scope(s) are intact.\n"+
			"Run convcache compact %s to drop the damage (the entries it held are measured again).\n",
			r.Path, len(r.Problems), bytesText(lost), r.Entries, r.Scopes, r.Path)
	default:
		fmt.Fprintf(w, "%s: ok: %d records, %d entries in %d scope(s), %s\n", r.Path, r.Records, r.Entries, r.Scopes, bytesText(r.Size))
	}
}
