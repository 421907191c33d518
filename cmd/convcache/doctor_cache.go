package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/cudnn"
	"github.com/convcache/convcache/internal/cachefile"
)

// What convcache doctor says about the cache file the program would use
// and this machine's scope in it.

// cacheFindings reports the cache file at path (the default cache file
// unless --path names another, as convcache run sets it; unusable says why
// the program could not use it, from unusableCache), the mode the
// environment sets, and returns the file's summary (nil when it cannot be
// read) for the scope findings.
func cacheFindings(path string, unusable error) ([]finding, *fileReport) {
	var out []finding
	mode := libraryConfig(false).Cache.Mode
	switch mode {
	case cache.ModeOff:
		out = append(out, finding{"mode", statusProblem,
			"CONVCACHE_MODE=off or CONVCACHE_DISABLE is set: the library finds and stores nothing",
			"unset CONVCACHE_DISABLE and CONVCACHE_MODE (or set CONVCACHE_MODE=rw) for the program"})
	case cache.ModeReadOnly:
		out = append(out, finding{"mode", statusWarning,
			"CONVCACHE_MODE=ro: the program reuses what the file holds but stores no new result",
			"set CONVCACHE_MODE=rw (or unset it) where the program should add results"})
	case cache.ModeRecache:
		out = append(out, finding{"mode", statusWarning,
			"CONVCACHE_MODE=recache: the program benchmarks every convolution again, replacing what the file holds",
			"unset CONVCACHE_MODE once the results are measured again"})
	case cache.ModeStrict:
		out = append(out, finding{"mode", statusNote,
			"CONVCACHE_MODE=strict: a convolution that is not in the file fails instead of being benchmarked",
			"fill the file first (a run in mode rw, or convcache import of a bundle)"})
	}

	if unusable != nil {
		return append(out, finding{"cache", statusProblem, unusable.Error(),
			"the program's cuDNN calls would pass through uncached: name a file you can write with --path or CONVCACHE_PATH"}), nil
	}
	r, err := reportFile(path)
	if err != nil {
		f := finding{"cache", statusProblem, "cache file " + message(err), "move it aside or name another file with --path or CONVCACHE_PATH (the program starts a new one)"}
		if errors.Is(err, cache.ErrAccess) || errors.Is(err, cache.ErrIO) {
			f.Advice = "make it readable by you, or name another file with --path or CONVCACHE_PATH"
		}
		return append(out, f), nil
	}
	if !r.Exists {
		return append(out, finding{"cache", statusOK,
			fmt.Sprintf("cache file %s has not been created yet", path),
			"nothing to do: the first run that benchmarks creates it"}), r
	}
	f := finding{"cache", statusOK,
		fmt.Sprintf("cache file %s: %s in %s, %s", path, plural(r.Entries, "entry", "entries"), plural(len(r.Scopes), "scope", "scopes"), bytesText(r.Size)),
		"convcache stats shows more; convcache verify checks every record"}
	switch {
	case len(r.Corrupt) > 0:
		f.Status = statusWarning
		f.Summary += fmt.Sprintf("; %d damaged record(s), %s, whose entries are lost", len(r.Corrupt), bytesText(r.CorruptBytes))
		f.Advice = fmt.Sprintf("run convcache verify %s for details and convcache compact %s to drop the damage (the lost entries are measured again)", path, path)
	case r.NetworkFS:
		f.Status = statusWarning
		f.Summary += fmt.Sprintf(", on a network file system (%s)", r.FSType)
		f.Advice = "locks and rename are weaker there: prefer a local disk (--path or CONVCACHE_PATH)"
	case mode == cache.ModeReadOnly && unix.Access(path, unix.W_OK) != nil:
		f.Summary += "; it is not writable by you (mode ro needs only to read it)"
	}
	return append(out, f), r
}

// existingParent returns dir or its nearest ancestor that exists: the
// library creates the missing ones.
func existingParent(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

// scopeFindings reports this machine's scope for each device, as the
// library computes it in the program (CONVCACHE_SCOPE, else the device's
// fingerprint with CONVCACHE_TAG), and how many entries the file holds for
// it. cudnnLib, when not empty and CONVCACHE_CUDNN_LIBRARY is not set, is
// the cuDNN the program loads (torch's): the fingerprint is read from it,
// as the library in the program would.
func scopeFindings(r *fileReport, cudnnLib string) []finding {
	entries := func(scope string) string {
		if r == nil {
			return "the cache file could not be read"
		}
		h := cachefile.ScopeHash(scope)
		for _, s := range r.Scopes {
			if s.hash == h {
				return plural(s.Entries, "entry", "entries") + " in the cache file"
			}
		}
		return "no entries in the cache file yet"
	}
	advice := func(scope string) string {
		if strings.HasPrefix(entries(scope), "no entries") {
			return "the first run benchmarks each convolution once and stores it; the runs after it reuse the results"
		}
		return "a run finds these results instead of benchmarking again"
	}
	override, err := cudnn.ScopeOverride()
	if err != nil {
		return []finding{{"scope", statusProblem, message(err), "shorten CONVCACHE_SCOPE"}}
	}
	if override != "" {
		return []finding{{"scope", statusOK,
			fmt.Sprintf("CONVCACHE_SCOPE=%s names the scope of every device: %s", safeText(override), entries(override)),
			"keep it only if you name scopes yourself: without it each GPU model, driver and cuDNN gets its own. " + advice(override)}}
	}
	if cudnnLib != "" && os.Getenv("CONVCACHE_CUDNN_LIBRARY") == "" {
		os.Setenv("CONVCACHE_CUDNN_LIBRARY", cudnnLib) // the fingerprint of the cuDNN the program loads
	}
	devs, partial, err := cudnn.Devices()
	if err != nil {
		return []finding{{"scope", statusProblem, "no device fingerprint on this machine: " + deviceReason(err),
			"the interposer passes every call through without a device: run the program (and convcache doctor) on a machine with its GPUs and CUDA driver"}}
	}
	var out []finding
	for _, d := range devs {
		s, err := cudnn.ScopeFor(d)
		if err != nil {
			out = append(out, finding{"scope", statusProblem, fmt.Sprintf("device %d: %s", d.Ordinal, message(err)), "shorten CONVCACHE_TAG"})
			continue
		}
		out = append(out, finding{"scope", statusOK,
			fmt.Sprintf("device %d: %s (compute %d.%d, %d SMs), CUDA driver %d, cuDNN %d: %s",
				d.Ordinal, safeText(d.Name), d.Major, d.Minor, d.SMs, d.Driver, d.CuDNN, entries(s)),
			advice(s)})
	}
	if partial != nil {
		out = append(out, finding{"scope", statusWarning, message(partial), "check that device with nvidia-smi"})
	}
	return out
}
