package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/convcache/convcache/internal/cachefile"
	"github.com/convcache/convcache/internal/config"
	"github.com/convcache/convcache/remote"
)

// fileReport describes one cache file: what stats prints for the user
// cache and for the system tier.
type fileReport struct {
	Path           string         `json:"path"`
	Exists         bool           `json:"exists"`
	Error          string         `json:"error,omitempty"`
	Size           int64          `json:"size"`
	Version        uint32         `json:"version,omitempty"`
	LastCompaction *time.Time     `json:"last_compaction"`
	SnapshotBytes  int64          `json:"snapshot_bytes"`
	JournalBytes   int64          `json:"journal_bytes"`
	Records        int            `json:"records"`
	Entries        int            `json:"entries"`
	Scopes         []scopeReport  `json:"scopes"`
	FSType         string         `json:"fs_type,omitempty"`
	NetworkFS      bool           `json:"network_fs"`
	TornTail       *damageReport  `json:"torn_tail,omitempty"`
	Corrupt        []damageReport `json:"corrupt"`
	CorruptBytes   int64          `json:"corrupt_bytes"`
	Warnings       []string       `json:"warnings"`
}

type scopeReport struct {
	Name     string     `json:"name"`
	Hash     string     `json:"hash"`
	Entries  int        `json:"entries"`
	Bytes    int64      `json:"bytes"`
	LastUsed *time.Time `json:"last_used,omitempty"`
	hash     uint64
}

type damageReport struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

type remoteReport struct {
	URL       string  `json:"url"`
	Reachable bool    `json:"reachable"`
	LatencyMs float64 `json:"latency_ms,omitempty"`
	Error     string  `json:"error,omitempty"`
}

type statsReport struct {
	Cache      fileReport    `json:"cache"`
	Mode       string        `json:"mode"`
	MaxBytes   int64         `json:"max_bytes"`
	MaxEntries int64         `json:"max_entries"`
	Promote    bool          `json:"promote"`
	System     *fileReport   `json:"system"`
	Remote     *remoteReport `json:"remote"`
	Warnings   []string      `json:"warnings"`
}

func newStatsCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "stats [PATH] [--json]",
		Short: "summarise a cache file, its tiers and its health",
		Long: `Prints entries, bytes and last use per scope; the file's size split into the
compacted snapshot and the journal appended since; the time of the last
compaction ("never" for a file that was never compacted); the file system
(with a warning on a network file system); damage (a torn tail apart from
corrupt records); the mode and bounds the environment sets (CONVCACHE_MODE,
CONVCACHE_MAX_BYTES, CONVCACHE_MAX_ENTRIES); the read-only system tier
(CONVCACHE_SYSTEM_PATH); and whether the remote tier (CONVCACHE_REMOTE)
answers one read-only lookup. The default cache file not created yet is
reported as such; a PATH that does not exist is an error (exit 3).`,
		Args: atMostOnePath,
		RunE: func(c *cobra.Command, args []string) error { return runStats(e, args, asJSON) },
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func runStats(e *env, args []string, asJSON bool) error {
	path, err := cachePath(args)
	if err != nil {
		return err
	}
	cfg := libraryConfig(true)
	opts := cfg.Cache
	r := statsReport{Mode: opts.Mode.String(), MaxBytes: opts.MaxBytes, MaxEntries: opts.MaxEntries, Promote: opts.Promote, Warnings: []string{}}
	main, err := reportFile(path)
	if err != nil {
		return err
	}
	r.Cache = *main
	r.Warnings = append(r.Warnings, main.Warnings...)

	if sp := opts.SystemPath; sp != "" {
		sys, err := reportFile(sp)
		if err == nil && !sys.Exists {
			err = fmt.Errorf("%s does not exist", sp)
		}
		if err != nil {
			sys = &fileReport{Path: sp, Error: message(err), Scopes: []scopeReport{}, Corrupt: []damageReport{}, Warnings: []string{}}
			sys.Warnings = append(sys.Warnings, message(err)+"; fix or unset CONVCACHE_SYSTEM_PATH")
		}
		r.System = sys
		for _, w := range sys.Warnings {
			r.Warnings = append(r.Warnings, "system tier: "+w)
		}
	}
	if cfg.Remote.URL != "" {
		r.Remote = checkRemote(cfg.Remote)
		if !r.Remote.Reachable {
			r.Warnings = append(r.Warnings, fmt.Sprintf("remote tier %s: %s (jobs carry on with the local file)", r.Remote.URL, r.Remote.Error))
		}
	}
	if asJSON {
		return writeJSON(e.stdout, r)
	}
	printStats(e.stdout, &r)
	return nil
}

// reportFile summarises the cache file at path. A missing file is reported
// with Exists false; a file that cannot be read is an error.
func reportFile(path string) (*fileReport, error) {
	r := &fileReport{Path: path, Scopes: []scopeReport{}, Corrupt: []damageReport{}, Warnings: []string{}}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	f, err := cachefile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r.Exists = true
	r.Size, r.Version = f.Size, f.Version
	if f.Compacted {
		created := f.Created
		r.LastCompaction = &created
	}
	r.SnapshotBytes, r.JournalBytes, r.Records = f.SnapshotBytes, f.JournalBytes, f.Frames
	r.FSType, r.NetworkFS = f.FSType, f.NetworkFS
	lastUsed := map[uint64]time.Time{}
	for _, en := range f.Entries() {
		if en.Used.After(lastUsed[en.ScopeHash]) {
			lastUsed[en.ScopeHash] = en.Used
		}
	}
	for _, s := range f.Scopes() {
		sr := scopeReport{Name: s.Name, Hash: hashText(s.Hash), Entries: s.Entries, Bytes: s.Bytes, hash: s.Hash}
		if t, ok := lastUsed[s.Hash]; ok {
			sr.LastUsed = &t
		}
		r.Scopes = append(r.Scopes, sr)
		r.Entries += s.Entries
		if s.Name == "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("scope %s has %d entries but no name in the file (a damaged scope record): select it as --scope %s", hashText(s.Hash), s.Entries, hashText(s.Hash)))
		}
	}
	for _, d := range f.Damage {
		if d.Tail {
			r.TornTail = &damageReport{d.Offset, d.Length}
			r.Warnings = append(r.Warnings, fmt.Sprintf("torn tail at offset %d (%d bytes): an append cut short by a crash, or still being written; it loses nothing acknowledged and the next writer removes it", d.Offset, d.Length))
			continue
		}
		r.Corrupt = append(r.Corrupt, damageReport{d.Offset, d.Length})
		r.CorruptBytes += d.Length
	}
	if n := len(r.Corrupt); n > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d corrupt record(s), %d bytes, first at offset %d: their entries are lost; run convcache verify %s for details and convcache compact %s to drop them", n, r.CorruptBytes, r.Corrupt[0].Offset, path, path))
	}
	if f.NetworkFS {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s is on a network file system (%s): locks and rename are weaker there; prefer a local disk (set CONVCACHE_PATH)", path, f.FSType))
	}
	return r, nil
}

// checkRemote reports whether the remote tier answers. Package remote has
// no summary of its contents, so this is a reachability check: one lookup
// of a key no one writes, read-only, bounded by the library's timeout
// (CONVCACHE_REMOTE_TIMEOUT_MS, else 50 ms), so that it answers whether a
// library handle's lookups would get through.
func checkRemote(s config.Remote) *remoteReport {
	r := &remoteReport{URL: s.URL}
	c, err := remote.New(remote.Options{URL: s.URL, Timeout: s.Timeout, ReadOnly: true, Warn: io.Discard})
	if err != nil {
		r.URL = "(invalid)"
		r.Error = message(err) + "; fix CONVCACHE_REMOTE"
		return r
	}
	defer c.Close()
	r.URL = c.String()
	start := time.Now()
	c.Get("convcache-stats-probe", []byte("probe"))
	elapsed := time.Since(start)
	if st := c.Stats(); st.Errors > 0 {
		r.Error = fmt.Sprintf("unreachable within %v", s.Timeout)
		return r
	}
	r.Reachable = true
	r.LatencyMs = float64(elapsed.Microseconds()) / 1000
	return r
}

func printFile(w io.Writer, now time.Time, r *fileReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "file\t%s\n", r.Path)
	if !r.Exists {
		fmt.Fprintf(tw, "state\tnot created yet: %s\n", nothingCachedYet)
		tw.Flush()
		return
	}
	fsName := r.FSType
	if r.NetworkFS {
		fsName += " (network file system: see warnings)"
	}
	fmt.Fprintf(tw, "file system\t%s\n", fsName)
	fmt.Fprintf(tw, "size\t%s (snapshot %s, journal %s, %d records, format %d)\n", bytesText(r.Size),
		bytesText(r.SnapshotBytes), bytesText(r.JournalBytes), r.Records, r.Version)
	lastCompaction := "never"
	if r.LastCompaction != nil {
		lastCompaction = timeText(now, *r.LastCompaction)
	}
	fmt.Fprintf(tw, "last compaction\t%s\n", lastCompaction)
	fmt.Fprintf(tw, "entries\t%d in %d scope(s)\n", r.Entries, len(r.Scopes))
	switch {
	case len(r.Corrupt) > 0:
		fmt.Fprintf(tw, "damage\t%d corrupt record(s), %s\n", len(r.Corrupt), bytesText(r.CorruptBytes))
	case r.TornTail != nil:
		fmt.Fprintf(tw, "damage\tnone (a torn tail of %s: see warnings)\n", bytesText(r.TornTail.Length))
	default:
		fmt.Fprintf(tw, "damage\tnone\n")
	}
	tw.Flush()
	if len(r.Scopes) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "entries\tbytes\tlast used\t  scope\n")
		for _, s := range r.Scopes {
			used := "never"
			if s.LastUsed != nil {
				used = ageText(now, *s.LastUsed)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t  %s\n", s.Entries, bytesText(s.Bytes), used, scopeLabel(s.Name, s.hash))
		}
		tw.Flush()
	}
}

func printStats(w io.Writer, r *statsReport) {
	now := time.Now()
	printFile(w, now, &r.Cache)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "mode\t%s\n", r.Mode)
	limit := func(n int64, f func(int64) string) string {
		if n <= 0 {
			return "none"
		}
		return f(n)
	}
	fmt.Fprintf(tw, "limits\tmax bytes %s, max entries %s\n",
		limit(r.MaxBytes, bytesText), limit(r.MaxEntries, func(n int64) string { return fmt.Sprint(n) }))
	if r.System == nil {
		fmt.Fprintf(tw, "system tier\tnone (CONVCACHE_SYSTEM_PATH is not set)\n")
	}
	switch {
	case r.Remote == nil:
		fmt.Fprintf(tw, "remote tier\tnone (CONVCACHE_REMOTE is not set)\n")
	case r.Remote.Reachable:
		fmt.Fprintf(tw, "remote tier\t%s, reachable (%.2f ms)\n", r.Remote.URL, r.Remote.LatencyMs)
	default:
		fmt.Fprintf(tw, "remote tier\t%s, %s\n", r.Remote.URL, r.Remote.Error)
	}
	tw.Flush()
	if r.System != nil {
		promote := "hits stay in the system tier"
		if r.Promote {
			promote = "hits are copied to the user cache (CONVCACHE_PROMOTE)"
		}
		fmt.Fprintf(w, "\nsystem tier (CONVCACHE_SYSTEM_PATH, read-only; %s)\n", promote)
		if r.System.Error != "" {
			fmt.Fprintf(w, "file  %s\nerror %s\n", r.System.Path, r.System.Error)
		} else {
			printFile(w, now, r.System)
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w)
		for _, x := range slices.Compact(r.Warnings) {
			fmt.Fprintf(w, "warning: %s\n", x)
		}
	}
}
