package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// nx is a directory that does not exist: names in it are never loaded.
const nx = "/nonexistent-convcache-test"

// preloadValues are LD_PRELOAD values with every separator glibc has, and
// the bytes it does not split at.
var preloadValues = []string{
	nx + "/a.so",
	nx + "/a.so\t" + nx + "/b.so",
	nx + "/a.so\t" + nx + "/b.so:" + nx + "/c.so  " + nx + "/d.so\n" + nx + "/e.so::",
	"::" + nx + "/a.so: :" + nx + "/b.so ",
	nx + "/a.so\v" + nx + "/b.so\r" + nx + "/c.so,;" + nx + "/d.so",
	nx + "/" + strings.Repeat("a", 4086) + ".so:" + nx + "/z.so", // 4095 bytes: tried
	nx + "/" + strings.Repeat("a", 4087) + ".so:" + nx + "/z.so", // 4096 bytes: ignored
	" : ",
	"",
}

// glibc's loader says, for each name it tries and cannot open: "ERROR:
// ld.so: object 'NAME' from LD_PRELOAD cannot be preloaded (...): ignored."
var glibcTried = regexp.MustCompile(`(?s)ERROR: ld\.so: object '(.*?)' from LD_PRELOAD cannot be preloaded`)

// The names preloadNames finds in an LD_PRELOAD value are the ones the
// system's dynamic loader tries: asked of the loader itself.
func TestPreloadNamesAreTheLoaders(t *testing.T) {
	prog, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1)")
	}
	for _, v := range preloadValues {
		cmd := exec.Command(prog)
		cmd.Env = []string{"LD_PRELOAD=" + v}
		var se strings.Builder
		cmd.Stderr = &se
		if err := cmd.Run(); err != nil {
			t.Fatalf("LD_PRELOAD=%q true: %v", v, err)
		}
		var tried []string
		for _, m := range glibcTried.FindAllStringSubmatch(se.String(), -1) {
			tried = append(tried, m[1])
		}
		if v == preloadValues[0] && len(tried) != 1 {
			t.Skipf("this loader does not say which names it tried as glibc's does: %q", se.String())
		}
		if got := preloadNames(v); !slices.Equal(got, tried) {
			t.Errorf("LD_PRELOAD=%q: preloadNames %q, the loader tried %q", v, got, tried)
		}
	}
}

func TestAppendPreload(t *testing.T) {
	lib := "/opt/cc/lib/" + preloadName
	for _, c := range []struct{ cur, want string }{
		{"", lib},
		{" :: ", lib},
		{lib, lib},
		{"/a.so " + lib, "/a.so " + lib},
		{"/a.so:" + lib + ":/b.so", "/a.so:" + lib + ":/b.so"},
		{"/a.so", "/a.so:" + lib},
		// glibc reads "/a.so<TAB>lib" as one name: lib is not there.
		{"/a.so\t" + lib, "/a.so\t" + lib + ":" + lib},
		{lib + "\t", lib + "\t:" + lib},
		{"\n" + lib, "\n" + lib + ":" + lib},
		{"\t", "\t:" + lib},
		{lib + "/", lib + "/:" + lib},
	} {
		got, err := appendPreload(c.cur, lib)
		if err != nil || got != c.want {
			t.Errorf("appendPreload(%q): %q, %v; want %q", c.cur, got, err, c.want)
		}
		// Whatever it returns, the loader loads lib.
		found := false
		for _, n := range preloadNames(got) {
			found = found || n == lib
		}
		if !found {
			t.Errorf("appendPreload(%q) = %q: the loader would not load %s", c.cur, got, lib)
		}
	}
	for _, bad := range []string{"/a b/" + preloadName, "/a:b/" + preloadName, "/" + strings.Repeat("d", 4090) + "/" + preloadName} {
		if got, err := appendPreload("", bad); err == nil || exitCode(err) != exitRunFailed {
			t.Errorf("appendPreload(%.40q): %q, %v; want exit %d", bad, got, err, exitRunFailed)
		}
	}
	// Tabs and newlines are part of a name, to glibc: such a path is fine.
	if got, err := appendPreload("", "/a\tb/"+preloadName); err != nil || got != "/a\tb/"+preloadName {
		t.Errorf("a path with a tab: %q, %v", got, err)
	}
}

// convcache run with LD_PRELOAD naming the interposer only inside a longer
// name (after a tab) adds it: the command runs with it loaded.
func TestRunPreloadAfterTab(t *testing.T) {
	pre := fakePreload(t)
	cur := "/opt/a.so\t" + pre
	vars, _ := variables(t, runEnv(t, "LD_PRELOAD="+cur), "--preload", pre)
	if want := cur + ":" + pre; vars["LD_PRELOAD"] != want {
		t.Errorf("LD_PRELOAD=%q became %q, want %q", cur, vars["LD_PRELOAD"], want)
	}
}

// loneCommand copies convcache into a directory of its own, with no
// interposer beside it or in ../lib: only $CONVCACHE_LIBRARY can find one.
func loneCommand(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "bin", "convcache")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, binary, exe)
	return exe
}

// The interposer found beside a relative $CONVCACHE_LIBRARY goes into
// LD_PRELOAD as an absolute, clean path: a command that changes directory
// loads the same file, not whatever sits at that relative path there.
func TestRunLibraryRelative(t *testing.T) {
	exe := loneCommand(t)
	pre := fakePreload(t) // DIR/libconvcache_preload.so, DIR/libconvcache.so.1
	work := t.TempDir()
	if err := os.Symlink(filepath.Dir(pre), filepath.Join(work, "build")); err != nil {
		t.Fatal(err)
	}
	for _, lib := range []string{"build/libconvcache.so.1", "./build/../build//libconvcache.so.1"} {
		cmd := exec.Command(exe, "run", "--", "sh", "-c", "cd / && printenv LD_PRELOAD")
		cmd.Env, cmd.Dir = runEnv(t, "CONVCACHE_LIBRARY="+lib), work
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil {
			t.Fatalf("CONVCACHE_LIBRARY=%s: %v: %s", lib, err, se.String())
		}
		got := strings.TrimSuffix(so.String(), "\n")
		if !filepath.IsAbs(got) || filepath.Clean(got) != got {
			t.Errorf("CONVCACHE_LIBRARY=%s: LD_PRELOAD=%q, not an absolute, clean path", lib, got)
			continue
		}
		if a, err1 := os.Stat(got); err1 != nil {
			t.Errorf("CONVCACHE_LIBRARY=%s: LD_PRELOAD=%q: %v", lib, got, err1)
		} else if b, _ := os.Stat(pre); !os.SameFile(a, b) {
			t.Errorf("CONVCACHE_LIBRARY=%s: LD_PRELOAD=%q is not %s", lib, got, pre)
		}
	}
}

// A relative $CONVCACHE_LIBRARY that cannot be made absolute (the current
// directory was removed) is refused, with convcache run's own exit code.
func TestRunLibraryRelativeNoDirectory(t *testing.T) {
	exe := loneCommand(t)
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `cd "$1" && rmdir "$1" && exec "$2" run -- true`, "sh", gone, exe)
	cmd.Env = runEnv(t, "CONVCACHE_LIBRARY=build/libconvcache.so.1")
	var se strings.Builder
	cmd.Stderr = &se
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != exitRunFailed ||
		!strings.HasPrefix(se.String(), "convcache run: CONVCACHE_LIBRARY=build/libconvcache.so.1: cannot make it an absolute path") ||
		strings.Count(se.String(), "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want %d and one line naming CONVCACHE_LIBRARY", code, se.String(), exitRunFailed)
	}
}
