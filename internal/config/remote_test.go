package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/remote"
)

func withEnv(t *testing.T, env map[string]string) *strings.Builder {
	t.Helper()
	old := LookupEnv
	LookupEnv = func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	w := &strings.Builder{}
	SetWarnOutput(w)
	t.Cleanup(func() { LookupEnv = old; SetWarnOutput(nopWriter{}) })
	return w
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

func TestRemoteEnv(t *testing.T) {
	for _, tc := range []struct {
		timeout, ttl string
		wantTO       time.Duration
		wantTTL      time.Duration
		warnings     int
	}{
		{"", "", remote.DefaultTimeout, 0, 0},
		{"250", "3600", 250 * time.Millisecond, time.Hour, 0},
		{" 7 ", "30d", 7 * time.Millisecond, 30 * 24 * time.Hour, 0},
		{"60000", "12h", time.Minute, 12 * time.Hour, 0},
		{"1", "90m", time.Millisecond, 90 * time.Minute, 0},
		{"1", "45s", time.Millisecond, 45 * time.Second, 0},
		{"1", "0", time.Millisecond, 0, 0},
		{"0", "-5", remote.DefaultTimeout, 0, 2},
		{"60001", "1y", remote.DefaultTimeout, 0, 2},
		{"fast", "forever", remote.DefaultTimeout, 0, 2},
		{"-1", "99999d", remote.DefaultTimeout, 0, 2},
	} {
		w := withEnv(t, map[string]string{"CONVCACHE_REMOTE_TIMEOUT_MS": tc.timeout, "CONVCACHE_REMOTE_TTL": tc.ttl})
		o := Remote(remote.Options{})
		if o.Timeout != tc.wantTO || o.TTL != tc.wantTTL {
			t.Errorf("timeout %q ttl %q: got %v %v, want %v %v", tc.timeout, tc.ttl, o.Timeout, o.TTL, tc.wantTO, tc.wantTTL)
		}
		if n := strings.Count(w.String(), "\n"); n != tc.warnings {
			t.Errorf("timeout %q ttl %q: %d warnings, want %d: %q", tc.timeout, tc.ttl, n, tc.warnings, w.String())
		}
	}
	// The caller's settings win over the environment.
	withEnv(t, map[string]string{"CONVCACHE_REMOTE_TIMEOUT_MS": "999", "CONVCACHE_REMOTE_TTL": "1d"})
	if o := Remote(remote.Options{Timeout: time.Second, TTL: time.Minute}); o.Timeout != time.Second || o.TTL != time.Minute {
		t.Errorf("explicit options overridden: %+v", o)
	}
}

func TestRemoteURL(t *testing.T) {
	withEnv(t, map[string]string{"CONVCACHE_REMOTE": "  redis://h:1/0 \n"})
	if u := RemoteURL(); u != "redis://h:1/0" {
		t.Fatalf("RemoteURL() = %q", u)
	}
	withEnv(t, nil)
	if u := RemoteURL(); u != "" {
		t.Fatalf("unset: %q", u)
	}
}

func TestWarnRemoteHidesPassword(t *testing.T) {
	for _, u := range []string{"redis://user:hunter2@h:1/0", "http://user:hunter2@h", "redis://user:hunter2@h:port/0", "redis://:hunter2@h:bad port"} {
		w := withEnv(t, nil)
		_, err := remote.New(remote.Options{URL: u})
		if !errors.Is(err, remote.ErrURL) && err != nil {
			t.Fatalf("%q: %v", u, err)
		}
		if err == nil {
			continue
		}
		WarnRemote("CONVCACHE_REMOTE", u, err)
		if out := w.String(); strings.Contains(out, "hunter2") || strings.Count(out, "\n") != 1 ||
			!strings.Contains(out, "CONVCACHE_REMOTE") || !strings.Contains(out, "local cache only") {
			t.Fatalf("%q: warning %q", u, out)
		}
	}
}

// The MAC key comes from a file or a variable, never both; a key that
// cannot be used is a warning (that never shows it) and no tier.
func TestRemoteMACKey(t *testing.T) {
	dir := t.TempDir()
	const secret = "sixteen or more bytes of key"
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	good := file("key", secret+"\n", 0o600)
	for _, tc := range []struct {
		name    string
		env     map[string]string
		key     string
		ok      bool
		warning string
	}{
		{"none", nil, "", true, ""},
		{"empty", map[string]string{"CONVCACHE_REMOTE_KEY": "", "CONVCACHE_REMOTE_KEY_FILE": " "}, "", true, ""},
		{"file", map[string]string{"CONVCACHE_REMOTE_KEY_FILE": good}, secret, true, ""},
		{"variable", map[string]string{"CONVCACHE_REMOTE_KEY": secret + "\n"}, secret, true, ""},
		{"both", map[string]string{"CONVCACHE_REMOTE_KEY": secret, "CONVCACHE_REMOTE_KEY_FILE": good}, "", false, "set one of them"},
		{"short variable", map[string]string{"CONVCACHE_REMOTE_KEY": "hunter2"}, "", false, "the key is 7 bytes"},
		{"world-readable file", map[string]string{"CONVCACHE_REMOTE_KEY_FILE": file("open", secret, 0o644)}, "", false, "mode 0644"},
		{"missing file", map[string]string{"CONVCACHE_REMOTE_KEY_FILE": filepath.Join(dir, "nope")}, "", false, "no such file"},
	} {
		w := withEnv(t, tc.env)
		key, ok := RemoteMACKey()
		if string(key) != tc.key || ok != tc.ok {
			t.Errorf("%s: %q %v, want %q %v", tc.name, key, ok, tc.key, tc.ok)
		}
		out := w.String()
		if tc.warning == "" && out != "" || tc.warning != "" && (!strings.Contains(out, tc.warning) ||
			strings.Count(out, "\n") != 1 || !strings.Contains(out, "local cache only")) {
			t.Errorf("%s: warning %q, want %q", tc.name, out, tc.warning)
		}
		if strings.Contains(out, "hunter2") || strings.Contains(out, secret) {
			t.Errorf("%s: the warning shows the key: %q", tc.name, out)
		}
	}
}
