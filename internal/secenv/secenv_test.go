package secenv_test

import (
	"encoding/binary"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"unsafe"

	"github.com/convcache/convcache/internal/asuser"
	"github.com/convcache/convcache/internal/secenv"
)

func TestLookupNotSecure(t *testing.T) {
	if secenv.Secure() {
		t.Skip("the tests themselves run with AT_SECURE")
	}
	t.Setenv("CONVCACHE_SECENV_TEST", "x")
	if v, ok := secenv.Lookup("CONVCACHE_SECENV_TEST"); !ok || v != "x" {
		t.Fatalf("Lookup = %q %v", v, ok)
	}
	secenv.SetSource(func(name string) (string, bool) { return "from source " + name, true })
	defer secenv.SetSource(nil)
	if v := secenv.Get("A"); v != "from source A" {
		t.Fatalf("SetSource ignored: %q", v)
	}
	for name, f := range secenv.Methods {
		if secure, ok := f(); ok && secure {
			t.Errorf("%s says AT_SECURE in an ordinary process", name)
		}
	}
}

func TestParseAuxv(t *testing.T) {
	w := int(unsafe.Sizeof(uintptr(0)))
	vec := func(pairs ...uint64) []byte {
		b := make([]byte, len(pairs)*w)
		for i, v := range pairs {
			if w == 8 {
				binary.NativeEndian.PutUint64(b[i*w:], v)
			} else {
				binary.NativeEndian.PutUint32(b[i*w:], uint32(v))
			}
		}
		return b
	}
	for _, tc := range []struct {
		b          []byte
		secure, ok bool
	}{
		{vec(6, 4096, 23, 1, 0, 0), true, true},
		{vec(23, 0, 0, 0), false, true},
		{vec(6, 4096, 0, 0, 23, 1), false, false}, // after AT_NULL: not read
		{vec(6, 4096), false, false},
		{vec(6, 4096, 23)[:w*3-1], false, false}, // cut short
		{nil, false, false},
	} {
		if secure, ok := secenv.ParseAuxv(tc.b); secure != tc.secure || ok != tc.ok {
			t.Errorf("parseAuxv(%x) = %v %v, want %v %v", tc.b, secure, ok, tc.secure, tc.ok)
		}
	}
	for _, v := range []string{"1", " TRUE", "yes", "On", "y"} {
		if b, ok := secenv.ParseBool(v); !b || !ok {
			t.Errorf("ParseBool(%q)", v)
		}
	}
	for _, v := range []string{"0", "false", "NO", "off", "n"} {
		if b, ok := secenv.ParseBool(v); b || !ok {
			t.Errorf("ParseBool(%q)", v)
		}
	}
	if _, ok := secenv.ParseBool("perhaps"); ok {
		t.Error("ParseBool(perhaps) ok")
	}
}

// A set-user-ID copy run by another user, and a copy with a file
// capability run by its owner's equal, have AT_SECURE set: every way of
// telling that can answer says so, and every variable reads as unset.
func TestSecureDetected(t *testing.T) {
	asuser.NeedRoot(t)
	env := []string{"CONVCACHE_PATH=/tmp/x.ccdb"}
	run := func(b *asuser.Bin) string {
		return b.Run(t, "TestHelperSecure", asuser.Cred{UID: asuser.Attacker, GID: asuser.Attacker}, env)
	}
	if out := run(asuser.Copy(t)); asuser.Field(out, "secure") != "false" || asuser.Field(out, "path") != "/tmp/x.ccdb" {
		t.Fatalf("ordinary run:\n%s", out)
	}
	setuid := asuser.Copy(t)
	setuid.Setuid(t, asuser.Nobody)
	check := func(out string) {
		t.Helper()
		if asuser.Field(out, "secure") != "true" || asuser.Field(out, "path") != "" {
			t.Fatalf("privileged run:\n%s", out)
		}
		answered := 0
		for name := range secenv.Methods {
			switch asuser.Field(out, name) {
			case "true":
				answered++
			case "false":
				t.Errorf("%s missed AT_SECURE:\n%s", name, out)
			}
		}
		if answered == 0 {
			t.Fatalf("no method answered:\n%s", out)
		}
	}
	check(run(setuid))
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
	out := run(capped)
	check(out)
	if asuser.Field(out, "ids") != "false" {
		t.Fatalf("with a file capability the ids are equal, yet:\n%s", out)
	}
}

func TestHelperSecure(t *testing.T) {
	if !asuser.Helper("TestHelperSecure") {
		return
	}
	asuser.Result("secure", strconv.FormatBool(secenv.Secure()))
	asuser.Result("path", secenv.Get("CONVCACHE_PATH"))
	for name, f := range secenv.Methods {
		if secure, ok := f(); ok {
			asuser.Result(name, strconv.FormatBool(secure))
		}
	}
	asuser.Result("ids", strconv.FormatBool(os.Getuid() != os.Geteuid()))
}
