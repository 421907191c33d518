package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/convcache/convcache/internal/config"
	"github.com/convcache/convcache/remote"
)

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// The warning for a URL that remote.New refuses never shows its password.
func TestWarnRemoteHidesPassword(t *testing.T) {
	t.Cleanup(func() { config.SetWarnOutput(nopWriter{}) })
	for _, u := range []string{"redis://user:hunter2@h:1/0", "http://user:hunter2@h", "redis://user:hunter2@h:port/0", "redis://:hunter2@h:bad port"} {
		w := &strings.Builder{}
		config.SetWarnOutput(w)
		_, err := remote.New(remote.Options{URL: u})
		if !errors.Is(err, remote.ErrURL) && err != nil {
			t.Fatalf("%q: %v", u, err)
		}
		if err == nil {
			continue
		}
		config.WarnRemote("CONVCACHE_REMOTE", u, err)
		if out := w.String(); strings.Contains(out, "hunter2") || strings.Count(out, "\n") != 1 ||
			!strings.Contains(out, "CONVCACHE_REMOTE") || !strings.Contains(out, "local cache only") {
			t.Fatalf("%q: warning %q", u, out)
		}
	}
}
