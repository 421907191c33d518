package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/asuser"
	"github.com/convcache/convcache/internal/secenv"
)

// logOpts returns the options with verbose logging to path.
func logOpts(t *testing.T, path string) (cache.Options, *strings.Builder) {
	l, w := mapEnv(t, map[string]string{"CONVCACHE_VERBOSE": "1", "CONVCACHE_LOG": path, "CONVCACHE_PATH": "/unused"})
	cfg, err := Resolve(Request{}, l)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Cache, w
}

// CONVCACHE_LOG does not follow a link another user planted, nor append to
// another user's file: it warns once and uses standard error.
func TestLogFileTrust(t *testing.T) {
	asuser.NeedRoot(t)
	dir := asuser.Dir(t)
	os.Chmod(dir, 0o777|os.ModeSticky)
	bashrc := filepath.Join(asuser.Dir(t), ".bashrc")
	os.WriteFile(bashrc, []byte("# mine\n"), 0o644)
	link := filepath.Join(dir, "convcache.log")
	os.Symlink(bashrc, link)
	os.Lchown(link, asuser.Attacker, asuser.Attacker)
	o, w := logOpts(t, link)
	if o.Log != os.Stderr {
		o.Log.Write([]byte("convcache,insert,...\n"))
		t.Fatal("CONVCACHE_LOG followed a foreign link")
	}
	if !strings.Contains(w.String(), "symbolic link") {
		t.Fatalf("warning: %q", w.String())
	}
	if b, _ := os.ReadFile(bashrc); string(b) != "# mine\n" {
		t.Fatalf("the link's target was written: %q", b)
	}

	foreign := filepath.Join(dir, "foreign.log")
	os.WriteFile(foreign, nil, 0o644)
	os.Chown(foreign, asuser.Attacker, asuser.Attacker)
	if o, w := logOpts(t, foreign); o.Log != os.Stderr || !strings.Contains(w.String(), "owned by uid 61003") {
		t.Fatalf("a foreign log file was used (warning %q)", w.String())
	}

	// This user's own file, new or through this user's own link: used.
	mine := filepath.Join(t.TempDir(), "mine.log")
	o, _ = logOpts(t, mine)
	if o.Log == os.Stderr {
		t.Fatal("a new log file of this user was refused")
	}
	if fi, err := os.Stat(mine); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new log file: %v %v", fi, err)
	}
	own := filepath.Join(t.TempDir(), "link.log")
	os.Symlink(mine, own)
	if o, w := logOpts(t, own); o.Log == os.Stderr {
		t.Fatalf("this user's link was refused: %q", w.String())
	}
}

// Under AT_SECURE (a setuid or file-capability program) every variable is
// ignored: the environment belongs to whoever started the program.
func TestSecureIgnoresEnvironment(t *testing.T) {
	asuser.NeedRoot(t)
	env := []string{"CONVCACHE_PATH=/tmp/chosen-by-the-caller.ccdb", "HOME=/home/caller",
		"CONVCACHE_CUDA_LIBRARY=/tmp/evil.so", "CONVCACHE_MODE=off"}
	run := func(b *asuser.Bin) string {
		return b.Run(t, "TestHelperSecureEnv", asuser.Cred{UID: asuser.Attacker, GID: asuser.Attacker}, env)
	}
	// Control: the same program, not privileged, sees the variables.
	if out := run(asuser.Copy(t)); asuser.Field(out, "path") != "/tmp/chosen-by-the-caller.ccdb" {
		t.Fatalf("unprivileged run:\n%s", out)
	}
	setuid := asuser.Copy(t)
	setuid.Setuid(t, asuser.Nobody)
	out := run(setuid)
	if asuser.Field(out, "euid") != "61004" {
		t.Fatalf("the copy did not run setuid:\n%s", out)
	}
	if asuser.Field(out, "path") != "" || asuser.Field(out, "cuda") != "" || asuser.Field(out, "mode") != "rw" ||
		!strings.Contains(asuser.Field(out, "patherr"), "AT_SECURE") {
		t.Fatalf("setuid run used the caller's environment:\n%s", out)
	}
	setcap, err := exec.LookPath("setcap")
	if err != nil {
		t.Log("no setcap: the file-capability case is not tested")
		return
	}
	capped := asuser.Copy(t)
	if out, err := exec.Command(setcap, "cap_net_bind_service+ep", capped.Path).CombinedOutput(); err != nil {
		t.Logf("setcap failed (%v: %s): the file-capability case is not tested", err, out)
		return
	}
	if out := run(capped); asuser.Field(out, "path") != "" || asuser.Field(out, "euid") != "61003" {
		t.Fatalf("file-capability run used the caller's environment:\n%s", out)
	}
}

func TestHelperSecureEnv(t *testing.T) {
	if !asuser.Helper("TestHelperSecureEnv") {
		return
	}
	cfg, _ := Resolve(Request{}, secenv.Lookup)
	asuser.Result("mode", cfg.Cache.Mode.String())
	rw := cache.ModeReadWrite // a mode that needs the file, whatever CONVCACHE_MODE says
	cfg, err := Resolve(Request{Mode: &rw}, secenv.Lookup)
	asuser.Result("path", cfg.Path)
	if err != nil {
		asuser.Result("patherr", err.Error())
	}
	asuser.Result("cuda", secenv.Get("CONVCACHE_CUDA_LIBRARY"))
	asuser.Result("euid", strconv.Itoa(os.Geteuid()))
}
