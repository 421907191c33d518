package cache_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/asuser"
	"github.com/convcache/convcache/internal/config"
	"github.com/convcache/convcache/internal/secenv"
)

// Two members of a group share one cache in a setgid group directory, as
// the README sets it up: each inserts, compacts and reads the other's
// entries, whatever their umask, and the file and its lock stay 0660 in the
// group.
func TestGroupSharedCache(t *testing.T) {
	asuser.NeedRoot(t)
	bin := asuser.Copy(t)
	team := filepath.Join(asuser.Dir(t), "team")
	if err := os.Mkdir(team, 0o700); err != nil {
		t.Fatal(err)
	}
	// The README's setup: a group directory, setgid, for the group only.
	if err := os.Chown(team, 0, asuser.Group); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(team, 0o770|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(team, "cache.ccdb")
	a := asuser.Cred{UID: asuser.MemberA, GID: asuser.MemberA, Groups: []int{asuser.Group}}
	b := asuser.Cred{UID: asuser.MemberB, GID: asuser.MemberB, Groups: []int{asuser.Group}, Umask: 0o077}
	env := []string{"CONVCACHE_TRUST_SHARED=1"}
	member := func(who asuser.Cred, ops ...string) string {
		return bin.Run(t, "TestHelperGroupMember", who, env, append([]string{path}, ops...)...)
	}
	member(a, "insert:a:100")
	checkModeGroup(t, path, 0o660, asuser.Group)
	checkModeGroup(t, path+".lock", 0o660, asuser.Group)
	out := member(b, "expect:a:100", "insert:b:200")
	if n, _ := strconv.Atoi(asuser.Field(out, "compactions")); n == 0 {
		t.Fatalf("member B did not compact:\n%s", out)
	}
	checkModeGroup(t, path, 0o660, asuser.Group)
	out = member(a, "expect:b:200", "insert:c:400")
	if n, _ := strconv.Atoi(asuser.Field(out, "compactions")); n == 0 {
		t.Fatalf("member A did not compact:\n%s", out)
	}
	checkModeGroup(t, path, 0o660, asuser.Group)
	member(b, "expect:a:100", "expect:b:200", "expect:c:400")
	// Someone outside the group cannot even reach the file.
	if _, err := bin.Try("TestHelperGroupMember", asuser.Cred{UID: asuser.Nobody, GID: asuser.Nobody}, env, path, "expect:a:1"); err == nil {
		t.Fatal("a user outside the group read the cache")
	}
}

// TestHelperGroupMember is one member's process in TestGroupSharedCache:
// it opens the cache as the library would with the environment, then runs
// the operations in its arguments: insert:P:N inserts keys P0..PN-1 and
// saves (compacting when due), expect:P:N checks them.
func TestHelperGroupMember(t *testing.T) {
	if !asuser.Helper("TestHelperGroupMember") {
		return
	}
	args := asuser.Args()
	cfg, err := config.Resolve(config.Request{Path: args[0]}, secenv.Lookup)
	if err != nil {
		t.Fatal(err)
	}
	opts := cfg.Cache
	opts.CompactJournal, opts.Warn = 4096, os.Stdout
	c, err := cache.Open(cfg.Path, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ro, why := c.ReadOnly(); ro {
		t.Fatalf("opened read-only: %s", why)
	}
	for _, op := range args[1:] {
		f := strings.Split(op, ":")
		n, _ := strconv.Atoi(f[2])
		for i := 0; i < n; i++ {
			k, v := []byte(fmt.Sprintf("%s%d", f[1], i)), []byte(fmt.Sprintf("value of %s%d", f[1], i))
			switch f[0] {
			case "insert":
				if err := c.Insert(k, v); err != nil {
					t.Fatal(err)
				}
			case "expect":
				got, ok, err := c.Get(k)
				if !ok || err != nil || string(got) != string(v) {
					t.Fatalf("%s: got %q %v %v", k, got, ok, err)
				}
			}
		}
		if f[0] == "insert" {
			if err := c.Save(); err != nil {
				t.Fatal(err)
			}
		}
	}
	asuser.Result("compactions", strconv.FormatUint(c.Stats().Compactions, 10))
}
