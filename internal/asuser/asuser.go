package asuser

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// helperVar names the helper a child process runs. (The child reads it
// with os.Getenv, which Go does not filter under AT_SECURE.)
const helperVar = "CONVCACHE_TEST_ASUSER_HELPER"

// Unprivileged ids for the tests: not in /etc/passwd on purpose; the
// kernel needs no entry.
const (
	Group    = 61000 // the shared group
	MemberA  = 61001
	MemberB  = 61002
	Attacker = 61003
	Nobody   = 61004
)

// NeedRoot skips the test unless it runs as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run code as other users (run the tests as root to cover this)")
	}
}

// Dir returns a new directory that every user may enter and list (mode
// 0755), removed when the test ends.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "convcache-asuser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// Bin is a copy of the running test binary that other users may execute.
type Bin struct {
	Path string
}

// Copy copies the running test binary into a new directory of Dir.
func Copy(t testing.TB) *Bin {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	p := filepath.Join(Dir(t), filepath.Base(self))
	out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return &Bin{Path: p}
}

// Setuid makes the copy owned by uid and set-user-ID: whoever runs it
// runs with effective uid uid, and the kernel sets AT_SECURE.
func (b *Bin) Setuid(t testing.TB, uid int) {
	t.Helper()
	if err := os.Chown(b.Path, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(b.Path, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
}

// Cred says who a child runs as.
type Cred struct {
	UID, GID int
	Groups   []int // supplementary groups
	Umask    int   // the child's umask; 0 means 022
}

// Run runs helper (a test function name) in the copy as cred, with env
// added to a minimal environment and args after the flags. It returns the
// child's standard output, failing the test if the child fails.
func (b *Bin) Run(t testing.TB, helper string, cred Cred, env []string, args ...string) string {
	t.Helper()
	out, err := b.Try(helper, cred, env, args...)
	if err != nil {
		t.Fatalf("%s as uid %d: %v\n%s", helper, cred.UID, err, out)
	}
	return out
}

// Try is Run that returns the child's error instead of failing the test.
func (b *Bin) Try(helper string, cred Cred, env []string, args ...string) (string, error) {
	cmd := exec.Command(b.Path, append([]string{"-test.run=^" + helper + "$", "-test.count=1", "--"}, args...)...)
	cmd.Env = append([]string{helperVar + "=" + helper, "PATH=/usr/bin:/bin"}, env...)
	cmd.Dir = filepath.Dir(b.Path)
	groups := make([]uint32, len(cred.Groups))
	for i, g := range cred.Groups {
		groups[i] = uint32(g)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
		Uid: uint32(cred.UID), Gid: uint32(cred.GID), Groups: groups,
	}}
	umask := cred.Umask
	if umask == 0 {
		umask = 0o022
	}
	cmd.Env = append(cmd.Env, fmt.Sprintf("%s_UMASK=%o", helperVar, umask))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Helper reports whether this process is a child started to run helper,
// and then sets the umask the parent asked for. A helper test returns at
// once when it is false.
func Helper(helper string) bool {
	if os.Getenv(helperVar) != helper {
		return false
	}
	var umask int
	fmt.Sscanf(os.Getenv(helperVar+"_UMASK"), "%o", &umask)
	syscall.Umask(umask)
	return true
}

// Args returns the arguments after the test flags, in a helper.
func Args() []string {
	for i, a := range os.Args {
		if a == "--" {
			return os.Args[i+1:]
		}
	}
	return nil
}

// Result prints a line the parent looks for with Field.
func Result(key, value string) { fmt.Printf("asuser:%s=%s\n", key, value) }

// Field returns the value a child printed with Result, or "" if none.
func Field(out, key string) string {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "asuser:"+key+"="); ok {
			return v
		}
	}
	return ""
}
