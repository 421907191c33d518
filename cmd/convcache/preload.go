package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

const (
	preloadName = "libconvcache_preload.so"
	// The interposer loads the first of these from its own directory.
	libMajorName = "libconvcache.so.1"
	libName      = "libconvcache.so"
)

// multiarch is Debian's library directory name for this platform
// (PREFIX/lib/x86_64-linux-gnu).
var multiarch = map[string]string{
	"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu",
	"s390x": "s390x-linux-gnu", "riscv64": "riscv64-linux-gnu", "386": "i386-linux-gnu",
}

// findPreload returns the interposer convcache run uses: explicit when it
// is given, else the first of preloadCandidates that exists. Either way
// libconvcache.so.1 must be beside it, where the interposer loads it from;
// without it every call would pass through to cuDNN, uncached. The path is
// absolute and clean: the command, or a program it starts in another
// directory, must load this file and no other.
func findPreload(explicit string) (string, error) {
	if explicit != "" {
		p, err := absClean(explicit)
		if err != nil {
			return "", withCode(exitRunFailed, "--preload %s: %v", explicit, err)
		}
		if !isFile(p) {
			return "", withCode(exitRunFailed, "--preload %s: no such file; give the path of %s", explicit, preloadName)
		}
		return p, checkLibBeside(p)
	}
	cands := preloadCandidates()
	for _, c := range cands {
		if c.err != nil {
			return "", withCode(exitRunFailed, "%s: %v; give an absolute path, or --preload PATH", c.from, c.err)
		}
		if isFile(c.path) {
			return c.path, checkLibBeside(c.path)
		}
	}
	return "", withCode(exitRunFailed, "cannot find %s (looked in %s); build it with make, install it with make install, or give --preload PATH",
		preloadName, strings.Join(dirsOf(cands), ", "))
}

// candidate is a place the interposer may be: an absolute, clean path, or
// the error that kept it from being made one (from names its origin).
type candidate struct {
	path string
	from string
	err  error
}

// preloadCandidates lists where the interposer may be, in order: beside
// this command (build/), in the library directory of its install prefix
// (PREFIX/bin/convcache, PREFIX/lib), and beside $CONVCACHE_LIBRARY.
func preloadCandidates() []candidate {
	var out []candidate
	add := func(from, p string) {
		abs, err := absClean(p)
		out = append(out, candidate{abs, from, err})
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir := filepath.Dir(exe)
		prefix := filepath.Dir(dir)
		add(exe, filepath.Join(dir, preloadName))
		add(exe, filepath.Join(prefix, "lib", preloadName))
		add(exe, filepath.Join(prefix, "lib64", preloadName))
		if m, ok := multiarch[runtime.GOARCH]; ok {
			add(exe, filepath.Join(prefix, "lib", m, preloadName))
		}
	}
	if lib := os.Getenv("CONVCACHE_LIBRARY"); strings.Contains(lib, "/") {
		add("CONVCACHE_LIBRARY="+lib, filepath.Join(filepath.Dir(lib), preloadName))
	}
	return out
}

// absClean returns p as an absolute, clean path: a relative one is taken
// from the current directory, which must still exist.
func absClean(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("cannot make it an absolute path: %v", err)
	}
	if !filepath.IsAbs(abs) { // filepath.Abs promises one; the environment must never get less
		return "", fmt.Errorf("cannot make it an absolute path (got %q)", abs)
	}
	return filepath.Clean(abs), nil
}

// checkLibBeside checks that the library the interposer loads is in its
// directory.
func checkLibBeside(preload string) error {
	dir := filepath.Dir(preload)
	if isFile(filepath.Join(dir, libMajorName)) || isFile(filepath.Join(dir, libName)) {
		return nil
	}
	return withCode(exitRunFailed, "%s has no %s beside it: the interposer loads the library from its own directory; keep the two together", preload, libMajorName)
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func dirsOf(cands []candidate) []string {
	var out []string
	for _, c := range cands {
		out = append(out, filepath.Dir(c.path))
	}
	return out
}
