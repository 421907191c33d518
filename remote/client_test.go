package remote_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/remote"
)

// URLs and options are checked by New, which does not connect.
func TestNew(t *testing.T) {
	for _, u := range []string{
		"", "localhost:6379", "http://host:6379", "redis://", "redis://:6379",
		"redis://host:99999", "redis://host:port", "redis://host/notanumber", "unix:///tmp/sock",
	} {
		if _, err := remote.New(remote.Options{URL: u}); !errors.Is(err, remote.ErrURL) {
			t.Errorf("New(%q) = %v, want ErrURL", u, err)
		}
	}
	for _, u := range []string{
		"redis://host", "redis://host:6380/2", "redis://user:pass@host:1/0", "rediss://host:6380/0", " redis://h/1 ",
	} {
		r, err := remote.New(remote.Options{URL: u})
		if err != nil {
			t.Errorf("New(%q): %v", u, err)
			continue
		}
		if strings.Contains(r.String(), "pass@") {
			t.Errorf("String() shows the password: %s", r)
		}
		r.Close()
	}
	for _, o := range []remote.Options{
		{Timeout: -1}, {Timeout: 2 * time.Minute}, {TTL: -time.Second}, {LockTTL: time.Millisecond},
		{MaxValue: 2 << 20}, {QueueEntries: -1}, {MinBackoff: time.Second, MaxBackoff: time.Millisecond},
	} {
		o.URL = "redis://h"
		if _, err := remote.New(o); !errors.Is(err, remote.ErrOptions) {
			t.Errorf("New(%+v) = %v, want ErrOptions", o, err)
		}
	}
}
