package config

import (
	"errors"
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
