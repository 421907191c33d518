package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// placeBinary puts a copy of the convcache binary at dir/name and creates
// each file of files (relative to root) empty.
func placeBinary(t *testing.T, root, exe string, files ...string) string {
	t.Helper()
	for _, f := range append([]string{exe}, files...) {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(root, exe)
	if err := os.Link(binary, dst); err != nil { // another file system: copy
		src, err := os.Open(binary)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, src); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func runAt(t *testing.T, exe string, want int, args ...string) result {
	t.Helper()
	saved := binary
	binary = exe
	defer func() { binary = saved }()
	return mustRun(t, want, nil, args...)
}

// An installed prefix (make install, or the wheel's package): every value,
// found from the binary's own path, also through a link to it.
func TestConfigInstalledPrefix(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "prefix")
	exe := placeBinary(t, p, "bin/convcache", "lib/libconvcache.so.1", "include/convcache.h",
		"lib/cmake/convcache/convcacheConfig.cmake", "lib/pkgconfig/convcache.pc")
	lib, inc := filepath.Join(p, "lib"), filepath.Join(p, "include")
	want := "-I" + inc + " -L" + lib + " -lconvcache -Wl,-rpath," + lib + "\n"
	if got := runAt(t, exe, exitOK, "config", "--libs", "--cflags").stdout; got != want {
		t.Errorf("config --libs --cflags:\n got %q\nwant %q", got, want)
	}
	if got := runAt(t, exe, exitOK, "config", "--cmakedir").stdout; got != filepath.Join(lib, "cmake", "convcache")+"\n" {
		t.Errorf("config --cmakedir: %q", got)
	}
	if got := runAt(t, exe, exitOK, "config", "--pkgconfigdir", "--prefix").stdout; got != p+" "+filepath.Join(lib, "pkgconfig")+"\n" {
		t.Errorf("config --pkgconfigdir --prefix: %q", got)
	}
	all := runAt(t, exe, exitOK, "config").stdout
	for _, w := range []string{"prefix        " + p + "\n", "cmakedir      " + lib + "/cmake/convcache\n"} {
		if !strings.Contains(all, w) {
			t.Errorf("config with no flag lacks %q:\n%s", w, all)
		}
	}
	// A link on PATH to the installed command: the installation is the link's target's.
	link := filepath.Join(root, "elsewhere", "convcache")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	if got := runAt(t, link, exitOK, "config", "--prefix").stdout; got != p+"\n" {
		t.Errorf("through a link: config --prefix %q, want %q", got, p)
	}
}

// The build tree: the library beside the command, the headers in include/;
// no package files, so --cmakedir says so and exits 3.
func TestConfigBuildTree(t *testing.T) {
	b := filepath.Join(t.TempDir(), "build")
	exe := placeBinary(t, b, "convcache", "libconvcache.so.1", "include/convcache.h")
	if got := runAt(t, exe, exitOK, "config", "--cflags").stdout; got != "-I"+filepath.Join(b, "include")+"\n" {
		t.Errorf("config --cflags: %q", got)
	}
	r := runAt(t, exe, exitIO, "config", "--cmakedir")
	if r.stdout != "" || !strings.Contains(r.stderr, "convcache config: "+b+" has no cmake/convcache/convcacheConfig.cmake") {
		t.Errorf("config --cmakedir in a build tree: stdout %q stderr %q", r.stdout, r.stderr)
	}
	if all := runAt(t, exe, exitOK, "config").stdout; !strings.Contains(all, "cmakedir      (none: ") {
		t.Errorf("config with no flag in a build tree:\n%s", all)
	}
}

// A command with no library and headers around it says where it looked.
func TestConfigNoInstallation(t *testing.T) {
	exe := placeBinary(t, t.TempDir(), "bin/convcache", "lib/libconvcache.so.1") // no include/
	r := runAt(t, exe, exitIO, "config", "--libs")
	if r.stdout != "" || !strings.Contains(r.stderr, "convcache config: no libconvcache.so.1 and convcache.h beside "+exe) {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
}
