package cache_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/asuser"
	"github.com/convcache/convcache/internal/cachefile"
)

// writeCache makes a cache file at path holding key=value (scope
// "default"), owned by uid with the given mode.
func writeCache(t *testing.T, path string, key, value string, uid int, mode os.FileMode) {
	t.Helper()
	c, err := cache.Open(path, &cache.Options{Warn: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Insert([]byte(key), []byte(value)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(path + ".lock")
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// stickyDir returns a directory like /tmp: everyone may create files, only
// their owners may remove or rename them.
func stickyDir(t *testing.T) string {
	d := asuser.Dir(t)
	if err := os.Chmod(d, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return d
}

func openWarn(t *testing.T, path string, o cache.Options) (*cache.Cache, *bytes.Buffer) {
	t.Helper()
	w := &bytes.Buffer{}
	o.Warn = w
	c, err := cache.Open(path, &o)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { c.Close() })
	return c, w
}

// mustNotServe checks that c serves nothing from its file, says why, and
// keeps what is inserted through it in memory (ErrReadOnly).
func mustNotServe(t *testing.T, c *cache.Cache, w *bytes.Buffer, key, why string) {
	t.Helper()
	if v, ok, err := c.Get([]byte(key)); ok || err != nil {
		t.Fatalf("served %q from a file it must not use (err %v)", v, err)
	}
	if ro, reason := c.ReadOnly(); !ro || !strings.Contains(reason, why) {
		t.Fatalf("ReadOnly() = %v, %q; want a reason with %q", ro, reason, why)
	}
	if !strings.Contains(w.String(), why) {
		t.Fatalf("no warning naming %q: %q", why, w.String())
	}
	if err := c.Insert([]byte("mine"), []byte("kept")); !errors.Is(err, cache.ErrReadOnly) {
		t.Fatalf("insert: %v, want ErrReadOnly", err)
	}
	if v, ok, _ := c.Get([]byte("mine")); !ok || string(v) != "kept" {
		t.Fatal("an insert into a not-served cache was lost")
	}
	if err := c.Save(); !errors.Is(err, cache.ErrReadOnly) {
		t.Fatalf("save: %v, want ErrReadOnly", err)
	}
}

// A link planted by another user in a sticky shared directory is not
// followed: the victim's find does not return the attacker's value.
func TestPlantedSymlinkNotFollowed(t *testing.T) {
	asuser.NeedRoot(t)
	dir := stickyDir(t)
	evil := filepath.Join(dir, "attacker.ccdb")
	writeCache(t, evil, "k", "EVIL", asuser.Attacker, 0o644)
	before, _ := os.ReadFile(evil)
	link := filepath.Join(dir, "victim.ccdb")
	if err := os.Symlink(evil, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, asuser.Attacker, asuser.Attacker); err != nil {
		t.Fatal(err)
	}
	c, w := openWarn(t, link, cache.Options{})
	mustNotServe(t, c, w, "k", "symbolic link owned by uid 61003")
	// Not even with CONVCACHE_TRUST_SHARED: it trusts files, not links.
	c2, w2 := openWarn(t, link, cache.Options{TrustShared: true})
	mustNotServe(t, c2, w2, "k", "symbolic link")
	if after, _ := os.ReadFile(evil); !bytes.Equal(before, after) {
		t.Fatal("the attacker's file was written")
	}
	if _, err := cachefile.ResolvePath(link); !errors.Is(err, cache.ErrAccess) || !strings.Contains(err.Error(), "not followed") {
		t.Fatalf("ResolvePath of a foreign link: %v", err)
	}
}

// A link this user (or root) made is followed, to the file it names.
func TestOwnSymlinkFollowed(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.ccdb")
	writeCache(t, real, "k", "mine", os.Geteuid(), 0o600)
	link := filepath.Join(dir, "link.ccdb")
	if err := os.Symlink("real.ccdb", link); err != nil {
		t.Fatal(err)
	}
	c, _ := openWarn(t, link, cache.Options{})
	if c.Path() != real {
		t.Fatalf("Path() = %s, want %s", c.Path(), real)
	}
	mustGet(t, c, []byte("k"), []byte("mine"))
	mustInsert(t, c, []byte("k2"), []byte("v2"))
	if _, err := os.Stat(link + ".lock"); err == nil {
		t.Fatal("a lock file was made beside the link")
	}
}

// A file another user owns, or that group or others may write, is not
// served unless CONVCACHE_TRUST_SHARED says so; neither is a FIFO, which
// must not block the open either.
func TestForeignFileNotServed(t *testing.T) {
	asuser.NeedRoot(t)
	dir := stickyDir(t)
	foreign := filepath.Join(dir, "foreign.ccdb")
	writeCache(t, foreign, "k", "EVIL", asuser.Attacker, 0o644)
	c, w := openWarn(t, foreign, cache.Options{})
	mustNotServe(t, c, w, "k", "owned by uid 61003")
	if !strings.Contains(w.String(), "CONVCACHE_TRUST_SHARED") {
		t.Fatalf("the warning does not say how to trust it: %q", w.String())
	}
	trusting, _ := openWarn(t, foreign, cache.Options{TrustShared: true})
	mustGet(t, trusting, []byte("k"), []byte("EVIL"))

	mine := filepath.Join(t.TempDir(), "groupw.ccdb")
	writeCache(t, mine, "k", "v", os.Geteuid(), 0o664)
	c, w = openWarn(t, mine, cache.Options{})
	mustNotServe(t, c, w, "k", "writable by group or others")
	trusting, _ = openWarn(t, mine, cache.Options{TrustShared: true})
	mustGet(t, trusting, []byte("k"), []byte("v"))
	mustInsert(t, trusting, []byte("k2"), []byte("v2"))

	fifo := filepath.Join(t.TempDir(), "fifo.ccdb")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c, w = openWarn(t, fifo, cache.Options{Mode: cache.ModeReadOnly})
	mustNotServe(t, c, w, "k", "not a regular file")
}

// A trusted file replaced later by another user's (as a compaction would
// replace it) is not read: the handle keeps what it had and turns
// read-only.
func TestReplacedByOtherUsersFile(t *testing.T) {
	asuser.NeedRoot(t)
	dir := asuser.Dir(t)
	path := filepath.Join(dir, "cache.ccdb")
	c, w := openWarn(t, path, cache.Options{})
	mustInsert(t, c, []byte("old"), []byte("trusted"))
	evil := filepath.Join(dir, "evil.ccdb")
	writeCache(t, evil, "new", "EVIL", asuser.Attacker, 0o644)
	if err := os.Rename(evil, path); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := c.Get([]byte("new")); ok {
		t.Fatalf("served %q from the replacing foreign file", v)
	}
	mustGet(t, c, []byte("old"), []byte("trusted"))
	if ro, why := c.ReadOnly(); !ro || !strings.Contains(why, "owned by uid 61003") {
		t.Fatalf("ReadOnly() = %v, %q", ro, why)
	}
	if n := strings.Count(w.String(), "owned by uid 61003"); n != 1 {
		t.Fatalf("warned %d times: %q", n, w.String())
	}
	if err := c.Insert([]byte("x"), []byte("y")); !errors.Is(err, cache.ErrReadOnly) {
		t.Fatalf("insert: %v", err)
	}
}

// A lock file planted as a link is never followed: the victim creates no
// file where it points, and its inserts stay in memory with a clear reason.
func TestPlantedLockSymlink(t *testing.T) {
	asuser.NeedRoot(t)
	dir := stickyDir(t)
	home := asuser.Dir(t)
	target := filepath.Join(home, "created-by-victim")
	path := filepath.Join(dir, "x.ccdb")
	if err := os.Symlink(target, path+".lock"); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path+".lock", asuser.Attacker, asuser.Attacker); err != nil {
		t.Fatal(err)
	}
	c, w := openWarn(t, path, cache.Options{LockTimeout: 200 * time.Millisecond})
	err := c.Insert([]byte("k"), []byte("v"))
	if _, serr := os.Lstat(target); serr == nil {
		t.Fatal("the lock link was followed: a file was created in the victim's home")
	}
	if !errors.Is(err, cache.ErrReadOnly) || !strings.Contains(err.Error(), ".lock") {
		t.Fatalf("insert: %v, want ErrReadOnly naming the lock file", err)
	}
	mustGet(t, c, []byte("k"), []byte("v"))
	if !strings.Contains(w.String(), "symbolic link") {
		t.Fatalf("warnings: %q", w.String())
	}
}

// A lock file another user owns and holds does not stall inserts for the
// lock timeout: the handle is read-only at once, with the reason.
func TestForeignLockFileHeld(t *testing.T) {
	asuser.NeedRoot(t)
	dir := stickyDir(t)
	path := filepath.Join(dir, "y.ccdb")
	writeCache(t, path, "k", "v", os.Geteuid(), 0o600)
	lockPath := path + ".lock"
	fd, err := unix.Open(lockPath, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	unix.Fchown(fd, asuser.Attacker, asuser.Attacker)
	unix.Fchmod(fd, 0o666)
	held := unix.Flock_t{Type: unix.F_WRLCK, Start: 0, Len: 1}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &held); err != nil {
		t.Fatal(err)
	}
	// A lock timeout far above what the checks below could take: a stall
	// would show as ErrPending, not as a slow test.
	c, _ := openWarn(t, path, cache.Options{LockTimeout: 500 * time.Millisecond})
	mustGet(t, c, []byte("k"), []byte("v")) // the data file is this user's: served
	err = c.Insert([]byte("k2"), []byte("v2"))
	if !errors.Is(err, cache.ErrReadOnly) || !strings.Contains(err.Error(), "owned by uid 61003") {
		t.Fatalf("insert with a foreign held lock: %v, want ErrReadOnly naming the owner", err)
	}
	n, built, err := c.GetOrCreate([]byte("k3"), make([]byte, 8), func(dst []byte) (int, error) { return copy(dst, "built"), nil })
	if !built || n != 5 || (err != nil && !errors.Is(err, cache.ErrReadOnly)) {
		t.Fatalf("get_or_create: %d %v %v", n, built, err)
	}
}

// Compaction keeps the file's mode and group; the tools' rewrite too.
func TestCompactionKeepsModeAndGroup(t *testing.T) {
	asuser.NeedRoot(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "c.ccdb")
	writeCache(t, path, "k", "v", os.Geteuid(), 0o640)
	if err := os.Chown(path, -1, asuser.Group); err != nil {
		t.Fatal(err)
	}
	c, _ := openWarn(t, path, cache.Options{CompactJournal: 4096})
	for i := 0; i < 300; i++ {
		mustInsert(t, c, key(i), val(i, 0))
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if c.Stats().Compactions == 0 {
		t.Fatal("no compaction ran")
	}
	checkModeGroup(t, path, 0o640, asuser.Group)
	if err := cachefile.Rewrite(path, time.Second, func(in []cachefile.Entry) ([]cachefile.Entry, error) { return in, nil }); err != nil {
		t.Fatal(err)
	}
	checkModeGroup(t, path, 0o640, asuser.Group)
}

func checkModeGroup(t *testing.T, path string, mode os.FileMode, gid int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != mode || int(st.Gid) != gid {
		t.Fatalf("%s: mode %04o group %d, want %04o group %d", path, fi.Mode().Perm(), st.Gid, mode, gid)
	}
}

// The tools apply the same rules: they do not follow a foreign link, do
// not rewrite a foreign file unless trusted, and never block on a FIFO.
func TestToolsTrust(t *testing.T) {
	asuser.NeedRoot(t)
	t.Setenv("CONVCACHE_TRUST_SHARED", "")
	dir := stickyDir(t)
	keep := func(in []cachefile.Entry) ([]cachefile.Entry, error) { return in, nil }

	foreign := filepath.Join(dir, "foreign.ccdb")
	writeCache(t, foreign, "k", "EVIL", asuser.Attacker, 0o644)
	before, _ := os.ReadFile(foreign)
	err := cachefile.Rewrite(foreign, time.Second, keep)
	if !errors.Is(err, cache.ErrAccess) || !strings.Contains(err.Error(), "CONVCACHE_TRUST_SHARED") {
		t.Fatalf("rewrite of a foreign file: %v", err)
	}
	if after, _ := os.ReadFile(foreign); !bytes.Equal(before, after) {
		t.Fatal("a foreign file was rewritten")
	}
	if f, err := cachefile.ReadFile(foreign); err != nil || len(f.Entries()) != 1 {
		t.Fatalf("reading a foreign file to inspect it: %v", err)
	}
	t.Setenv("CONVCACHE_TRUST_SHARED", "1")
	if err := cachefile.Rewrite(foreign, time.Second, keep); err != nil {
		t.Fatalf("rewrite with CONVCACHE_TRUST_SHARED=1: %v", err)
	}
	t.Setenv("CONVCACHE_TRUST_SHARED", "")

	// A foreign link to a missing file in the victim's home: nothing made.
	home := asuser.Dir(t)
	link := filepath.Join(dir, "import.ccdb")
	os.Symlink(filepath.Join(home, "new.ccdb"), link)
	os.Lchown(link, asuser.Attacker, asuser.Attacker)
	err = cachefile.Update(link, time.Second, keep)
	if !errors.Is(err, cache.ErrAccess) {
		t.Fatalf("update through a foreign link: %v", err)
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Fatalf("files made in the victim's home: %v", ents)
	}
	if _, err := cachefile.ReadFile(link); !errors.Is(err, cache.ErrAccess) {
		t.Fatalf("read through a foreign link: %v", err)
	}

	fifo := filepath.Join(t.TempDir(), "fifo.ccdb")
	syscall.Mkfifo(fifo, 0o600)
	if _, err := cachefile.ReadFile(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("read of a FIFO: %v", err)
	}

	// WriteNew never replaces what appeared at its path, a link included.
	out := filepath.Join(dir, "out.ccdb")
	os.Symlink(filepath.Join(home, "x"), out)
	if err := cachefile.WriteNew(out, nil); !errors.Is(err, cache.ErrInvalid) {
		t.Fatalf("WriteNew over a link: %v", err)
	}
}
