package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// installation is where this command's library and headers are: the
// install prefix above its bin/ (make install, cmake --install, and the
// wheel, whose Python package is laid out as a prefix), or the build tree
// it was built in.
type installation struct {
	prefix string // PREFIX, or the build directory
	libDir string // holds libconvcache.so.1
	incDir string // holds convcache.h
}

// findInstallation finds the installation of the running command, from
// its own absolute path (os.Executable, links resolved): never from the
// environment or the working directory.
func findInstallation() (installation, error) {
	exe, err := os.Executable()
	if err != nil {
		return installation{}, fmt.Errorf("cannot tell where this command is: %v", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return installationOf(exe)
}

// installationOf returns the installation of the command at exe, an
// absolute path: PREFIX/bin/convcache with libconvcache.so.1 in
// PREFIX/lib, lib64 or lib/<multiarch> and convcache.h in PREFIX/include;
// else DIR/convcache with DIR/libconvcache.so.1 and DIR/include/convcache.h
// (the build tree).
func installationOf(exe string) (installation, error) {
	if !filepath.IsAbs(exe) {
		return installation{}, fmt.Errorf("%s is not an absolute path", exe)
	}
	dir := filepath.Dir(exe)
	prefix := filepath.Dir(dir)
	inc := filepath.Join(prefix, "include")
	if isFile(filepath.Join(inc, "convcache.h")) {
		for _, lib := range libDirs(prefix) {
			if isFile(filepath.Join(lib, libMajorName)) {
				return installation{prefix, lib, inc}, nil
			}
		}
	}
	if isFile(filepath.Join(dir, libMajorName)) && isFile(filepath.Join(dir, "include", "convcache.h")) {
		return installation{dir, dir, filepath.Join(dir, "include")}, nil
	}
	return installation{}, fmt.Errorf("no %s and convcache.h beside %s (looked in %s/lib and %s/include, and in %s)",
		libMajorName, exe, prefix, prefix, dir)
}

// libDirs lists where an install prefix may keep its libraries.
func libDirs(prefix string) []string {
	out := []string{filepath.Join(prefix, "lib"), filepath.Join(prefix, "lib64")}
	if m, ok := multiarch[runtime.GOARCH]; ok {
		out = append(out, filepath.Join(prefix, "lib", m))
	}
	return out
}
