package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/convcache/convcache/internal/cachefile"
)

func TestSafeText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"cc1;gpu=NVIDIA H100 80GB HBM3;cc=9.0", "cc1;gpu=NVIDIA H100 80GB HBM3;cc=9.0"},
		{"Grafikkarte für 3D – 日本語", "Grafikkarte für 3D – 日本語"},
		{"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"a\rb\nc\td", `a\rb\nc\td`},
		{"bad \xff\xfe utf-8", `bad \xff\xfe utf-8`},
		{"\xe2\x80", `\xe2\x80`}, // a truncated character
		{"del \x7f nul \x00", `del \x7f nul \x00`},
		{"csi \u009b2J", `csi \u009b2J`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`},
		{"line\u2028sep", `line\u2028sep`},
		{`back\slash`, `back\\slash`},
		{`\x1b`, `\\x1b`}, // text that looks like an escape is not one
		{"", ""},
	} {
		if got := safeText(c.in); got != c.want {
			t.Errorf("safeText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// hostileScope is a scope name that would clear the screen, overwrite a
// line, forge a line of output and reorder text if printed as it is.
const hostileScope = "\x1b[2J\x1b[Hevil\rverified ok\n/tmp/x.ccdb: ok: 0 records\xff\xfe \u202eevil\u009b31m"

// Every command that prints a scope name read from the file escapes it in
// text output; JSON output is escaped by encoding/json.
func TestHostileScopeName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hostile.ccdb")
	now := time.Now()
	writeFile(t, path,
		entry(hostileScope, []byte("k1"), []byte("v1"), now, now),
		entry(hostileScope, torchKey(v7+"fwd", params(1, 3, 8, 3)), perf(1, 0.5), now, now))
	other := filepath.Join(dir, "other.ccdb")
	writeFile(t, other, entry(hostileScope, []byte("k1"), []byte("v2"), now.Add(time.Second), now))
	hash := hashText(cachefile.ScopeHash(hostileScope))

	runs := [][]string{
		{"ls", path},
		{"dump", path},
		{"stats", path},
		{"verify", path},
		{"prune", path, "--scope", hash, "--dry-run"},
		{"merge", path, other, "-o", filepath.Join(dir, "merged.ccdb")},
	}
	for _, args := range runs {
		r := mustRun(t, exitOK, nil, args...)
		out := r.stdout + r.stderr
		for _, bad := range []string{"\x1b", "\r", "\u202e", "\u009b", "\nverified ok", "\n/tmp/x.ccdb: ok"} {
			if strings.Contains(out, bad) {
				t.Errorf("convcache %s printed %q raw:\n%s", args[0], bad, out)
			}
		}
		if !utf8.ValidString(out) {
			t.Errorf("convcache %s printed invalid UTF-8:\n%q", args[0], out)
		}
		if args[0] != "verify" && !strings.Contains(out, `\x1b[2J\x1b[Hevil\rverified ok\n/tmp/x.ccdb: ok: 0 records\xff\xfe \u202eevil\u009b31m`) {
			t.Errorf("convcache %s does not show the escaped name:\n%s", args[0], out)
		}
	}
	// export names the file's scopes when none matches: quoted.
	r := mustRun(t, exitUsage, nil, "export", path, "--scope", "nope", "-o", filepath.Join(dir, "b.ccdb"))
	if strings.ContainsAny(r.stderr, "\x1b\r") || !utf8.ValidString(r.stderr) {
		t.Errorf("export printed the name raw: %q", r.stderr)
	}

	// JSON: no raw control byte; the name reads back (invalid UTF-8 as
	// U+FFFD, as encoding/json writes it).
	b, _ := json.Marshal(hostileScope)
	var want string
	json.Unmarshal(b, &want)
	for _, cmd := range []string{"ls", "dump"} {
		r := mustRun(t, exitOK, nil, cmd, path, "--json")
		if bytes.ContainsAny([]byte(r.stdout), "\x1b\r") {
			t.Errorf("%s --json printed a control byte raw", cmd)
		}
		var es []entryJSON
		decodeJSON(t, r.stdout, &es)
		if len(es) != 2 || es[0].Scope != want {
			t.Errorf("%s --json: scope %q", cmd, es[0].Scope)
		}
	}
	var s statsReport
	decodeJSON(t, mustRun(t, exitOK, nil, "stats", path, "--json").stdout, &s)
	if len(s.Cache.Scopes) != 1 || s.Cache.Scopes[0].Name != want {
		t.Errorf("stats --json: %+v", s.Cache.Scopes)
	}
}
