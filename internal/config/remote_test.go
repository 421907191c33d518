package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
)

// remoteOf resolves the remote settings of env for a handle in mode rw.
func remoteOf(t *testing.T, env map[string]string, req Request) (Remote, *strings.Builder) {
	t.Helper()
	v, w := varsOf(t, env)
	return v.remote(req, cache.ModeReadWrite), w
}

func TestRemoteEnv(t *testing.T) {
	for _, tc := range []struct {
		timeout, ttl string
		wantTO       time.Duration
		wantTTL      time.Duration
		warnings     int
	}{
		{"", "", DefaultRemoteTimeout, 0, 0},
		{"250", "3600", 250 * time.Millisecond, time.Hour, 0},
		{" 7 ", "30d", 7 * time.Millisecond, 30 * 24 * time.Hour, 0},
		{"60000", "12h", time.Minute, 12 * time.Hour, 0},
		{"1", "90m", time.Millisecond, 90 * time.Minute, 0},
		{"1", "45s", time.Millisecond, 45 * time.Second, 0},
		{"1", "0", time.Millisecond, 0, 0},
		{"0", "-5", DefaultRemoteTimeout, 0, 2},
		{"60001", "1y", DefaultRemoteTimeout, 0, 2},
		{"fast", "forever", DefaultRemoteTimeout, 0, 2},
		{"-1", "99999d", DefaultRemoteTimeout, 0, 2},
	} {
		r, w := remoteOf(t, map[string]string{"CONVCACHE_REMOTE": "redis://h/0",
			"CONVCACHE_REMOTE_TIMEOUT_MS": tc.timeout, "CONVCACHE_REMOTE_TTL": tc.ttl}, Request{})
		if r.Timeout != tc.wantTO || r.TTL != tc.wantTTL {
			t.Errorf("timeout %q ttl %q: got %v %v, want %v %v", tc.timeout, tc.ttl, r.Timeout, r.TTL, tc.wantTO, tc.wantTTL)
		}
		if n := lines(w); n != tc.warnings {
			t.Errorf("timeout %q ttl %q: %d warnings, want %d: %q", tc.timeout, tc.ttl, n, tc.warnings, w.String())
		}
	}
	// The caller's timeout wins over the environment; one out of range
	// warns, naming the option, and the environment's is used.
	env := map[string]string{"CONVCACHE_REMOTE": "redis://h/0", "CONVCACHE_REMOTE_TIMEOUT_MS": "999"}
	if r, w := remoteOf(t, env, Request{RemoteTimeout: time.Second}); r.Timeout != time.Second || w.Len() != 0 {
		t.Errorf("explicit timeout overridden: %+v %q", r, w.String())
	}
	r, w := remoteOf(t, env, Request{RemoteTimeout: 70 * time.Second})
	if r.Timeout != 999*time.Millisecond || lines(w) != 1 ||
		!strings.Contains(w.String(), `convcache_options.remote_timeout_ms="70000": expected 1 to 60000`) {
		t.Errorf("timeout out of range: %v, %q", r.Timeout, w.String())
	}
}

// parseTTL: seconds, or a count with a unit, within ten years.
func TestParseTTL(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"3600", time.Hour, true},
		{"45s", 45 * time.Second, true},
		{"45S", 45 * time.Second, true},
		{"90m", 90 * time.Minute, true},
		{"12H", 12 * time.Hour, true},
		{"30d", 30 * day, true},
		{"30 d", 30 * day, true},
		{"3650d", 3650 * day, true}, // the bound: ten years
		{"3651d", 0, false},
		{"315360000", 3650 * day, true},
		{"315360001", 0, false},
		{"87600h", 3650 * day, true},
		{"87601h", 0, false},
		{"9223372036854775807d", 0, false},
		{"99999999999999999999", 0, false}, // overflows int64
		{"", 0, false},
		{"d", 0, false},
		{"-5", 0, false},
		{"-1d", 0, false},
		{"1.5h", 0, false},
		{"1y", 0, false},
		{"1w", 0, false},
		{"1h30m", 0, false},
		{"forever", 0, false},
	} {
		if d, ok := parseTTL(tc.in); d != tc.want || ok != tc.ok {
			t.Errorf("parseTTL(%q) = %v, %v; want %v, %v", tc.in, d, ok, tc.want, tc.ok)
		}
	}
}

// The URL: the caller's (even "", which means none), else the variable's
// without white space around it; the settings only when one is asked for.
func TestRemoteURL(t *testing.T) {
	env := map[string]string{"CONVCACHE_REMOTE": "  redis://h:1/0 \n", "CONVCACHE_REMOTE_TIMEOUT_MS": "bogus"}
	if r, _ := remoteOf(t, env, Request{}); r.URL != "redis://h:1/0" || r.Source != "CONVCACHE_REMOTE" || !r.Enabled {
		t.Fatalf("from the environment: %+v", r)
	}
	caller := " redis://mine/1"
	if r, _ := remoteOf(t, env, Request{Remote: &caller}); r.URL != caller || r.Source != "convcache_options.remote" || !r.Enabled {
		t.Fatalf("the caller's: %+v", r)
	}
	none := ""
	if r, w := remoteOf(t, env, Request{Remote: &none}); !reflect.DeepEqual(r, Remote{}) || w.Len() != 0 {
		t.Fatalf("none asked for: %+v, warnings %q", r, w.String())
	}
	if r, w := remoteOf(t, map[string]string{"CONVCACHE_REMOTE": " ", "CONVCACHE_REMOTE_TTL": "bogus"}, Request{}); !reflect.DeepEqual(r, Remote{}) || w.Len() != 0 {
		t.Fatalf("unset: %+v, warnings %q", r, w.String())
	}
}

// The mode decides whether the tier is used, whether it writes, and
// whether the key file is read.
func TestRemoteMode(t *testing.T) {
	env := map[string]string{"CONVCACHE_REMOTE": "redis://h/0", "CONVCACHE_REMOTE_KEY": "sixteen or more bytes of key"}
	for _, tc := range []struct {
		mode        cache.Mode
		enabled, ro bool
		key         string
	}{
		{cache.ModeReadWrite, true, false, env["CONVCACHE_REMOTE_KEY"]},
		{cache.ModeReadOnly, true, true, env["CONVCACHE_REMOTE_KEY"]},
		{cache.ModeStrict, true, false, env["CONVCACHE_REMOTE_KEY"]},
		{cache.ModeOff, false, false, ""},
	} {
		v, _ := varsOf(t, env)
		r := v.remote(Request{}, tc.mode)
		if r.Enabled != tc.enabled || r.ReadOnly != tc.ro || string(r.MACKey) != tc.key || r.URL != "redis://h/0" || r.Timeout != DefaultRemoteTimeout {
			t.Errorf("mode %v: %+v", tc.mode, r)
		}
	}
}
