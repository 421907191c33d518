package main

import (
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
// without it every call would pass through to cuDNN, uncached.
func findPreload(explicit string) (string, error) {
	if explicit != "" {
		p, err := filepath.Abs(explicit)
		if err != nil {
			return "", withCode(exitRunFailed, "--preload %s: %v", explicit, err)
		}
		if !isFile(p) {
			return "", withCode(exitRunFailed, "--preload %s: no such file; give the path of %s", explicit, preloadName)
		}
		return p, checkLibBeside(p)
	}
	cands := preloadCandidates()
	for _, p := range cands {
		if isFile(p) {
			return p, checkLibBeside(p)
		}
	}
	return "", withCode(exitRunFailed, "cannot find %s (looked in %s); build it with make, install it with make install, or give --preload PATH",
		preloadName, strings.Join(dirsOf(cands), ", "))
}

// preloadCandidates lists where the interposer may be, in order: beside
// this command (build/), in the library directory of its install prefix
// (PREFIX/bin/convcache, PREFIX/lib), and beside $CONVCACHE_LIBRARY.
func preloadCandidates() []string {
	var out []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir := filepath.Dir(exe)
		prefix := filepath.Dir(dir)
		out = append(out,
			filepath.Join(dir, preloadName),
			filepath.Join(prefix, "lib", preloadName),
			filepath.Join(prefix, "lib64", preloadName))
		if m, ok := multiarch[runtime.GOARCH]; ok {
			out = append(out, filepath.Join(prefix, "lib", m, preloadName))
		}
	}
	if lib := os.Getenv("CONVCACHE_LIBRARY"); strings.Contains(lib, "/") {
		out = append(out, filepath.Join(filepath.Dir(lib), preloadName))
	}
	return out
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

func dirsOf(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Dir(p))
	}
	return out
}
