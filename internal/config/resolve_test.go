package config

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/secenv"
)

const (
	home    = "/home/u"
	homeDB  = "/home/u/.cache/convcache/cache.ccdb"
	testKey = "sixteen or more bytes of key"
)

// defaults is what Resolve gives for an environment with only HOME set.
func defaults() Config {
	return Config{
		Path: homeDB,
		Cache: cache.Options{
			Mode:           cache.ModeReadWrite,
			LockTimeout:    cache.DefaultLockTimeout,
			BuildTimeout:   cache.DefaultBuildTimeout,
			CompactJournal: cache.DefaultCompactJournal,
		},
	}
}

// everyVariable sets every variable Resolve reads to a valid value, and
// everyVariableConfig is what it resolves to.
var everyVariable = map[string]string{
	"HOME":                              home,
	"CONVCACHE_PATH":                    "/env/cache.ccdb",
	"CONVCACHE_SCOPE":                   "env-scope",
	"CONVCACHE_MODE":                    "ro",
	"CONVCACHE_LOCK_TIMEOUT_MS":         "100",
	"CONVCACHE_BUILD_TIMEOUT_MS":        "200",
	"CONVCACHE_MAX_BYTES":               "1M",
	"CONVCACHE_MAX_ENTRIES":             "100",
	"CONVCACHE_COMPACT_JOURNAL":         "64K",
	"CONVCACHE_TRUST_SHARED":            "1",
	"CONVCACHE_SYSTEM_PATH":             "/env/system.ccdb",
	"CONVCACHE_PROMOTE":                 "yes",
	"CONVCACHE_VERBOSE":                 "2",
	"CONVCACHE_LOG":                     "/dev/stdout",
	"CONVCACHE_REMOTE":                  "redis://env/0",
	"CONVCACHE_REMOTE_TIMEOUT_MS":       "75",
	"CONVCACHE_REMOTE_BUILD_TIMEOUT_MS": "500",
	"CONVCACHE_REMOTE_TTL":              "1h",
	"CONVCACHE_REMOTE_KEY":              testKey,
}

func everyVariableConfig() Config {
	return Config{
		Path: "/env/cache.ccdb",
		Cache: cache.Options{
			Scope: "env-scope", Mode: cache.ModeReadOnly,
			LockTimeout: 100 * time.Millisecond, BuildTimeout: 200 * time.Millisecond,
			MaxBytes: 1 << 20, MaxEntries: 100, CompactJournal: 64 << 10,
			TrustShared: true, SystemPath: "/env/system.ccdb", Promote: true,
			Verbose: 2, Log: os.Stdout,
		},
		Remote: Remote{URL: "redis://env/0", Source: "CONVCACHE_REMOTE", Enabled: true,
			Timeout: 75 * time.Millisecond, BuildTimeout: 500 * time.Millisecond, TTL: time.Hour, MACKey: []byte(testKey), ReadOnly: true},
	}
}

// with returns env plus more (more wins).
func with(env map[string]string, more ...string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	for i := 0; i+1 < len(more); i += 2 {
		out[more[i]] = more[i+1]
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// The table: for each setting, the caller's value, else its variable, else
// the default; CONVCACHE_DISABLE over every mode.
func TestResolve(t *testing.T) {
	caller := Request{
		Path: "/caller/cache.ccdb", Scope: "caller-scope", Mode: ptr(cache.ModeStrict),
		LockTimeout: time.Second, BuildTimeout: 2 * time.Second, MaxBytes: 2 << 20, MaxEntries: 200,
		SystemPath: "/caller/system.ccdb", Remote: ptr("redis://caller/1"), RemoteTimeout: 3 * time.Second,
		Log: io.Discard,
	}
	for _, tc := range []struct {
		name string
		req  Request
		env  map[string]string
		want func(*Config)
	}{
		{"defaults", Request{}, map[string]string{"HOME": home}, func(*Config) {}},
		{"every variable", Request{}, everyVariable, func(c *Config) { *c = everyVariableConfig() }},
		{"the caller over every variable", caller, everyVariable, func(c *Config) {
			*c = everyVariableConfig()
			c.Path = caller.Path
			c.Cache.Scope, c.Cache.Mode = caller.Scope, cache.ModeStrict
			c.Cache.LockTimeout, c.Cache.BuildTimeout = caller.LockTimeout, caller.BuildTimeout
			c.Cache.MaxBytes, c.Cache.MaxEntries = caller.MaxBytes, caller.MaxEntries
			c.Cache.SystemPath, c.Cache.Log = caller.SystemPath, io.Discard
			c.Remote.URL, c.Remote.Source = *caller.Remote, "convcache_options.remote"
			c.Remote.Timeout, c.Remote.ReadOnly = caller.RemoteTimeout, false
			c.Remote.BuildTimeout = caller.RemoteTimeout // never under the plain deadline
		}},
		{"the caller over the defaults", caller, map[string]string{"HOME": home}, func(c *Config) {
			c.Path = caller.Path
			c.Cache.Scope, c.Cache.Mode = caller.Scope, cache.ModeStrict
			c.Cache.LockTimeout, c.Cache.BuildTimeout = caller.LockTimeout, caller.BuildTimeout
			c.Cache.MaxBytes, c.Cache.MaxEntries = caller.MaxBytes, caller.MaxEntries
			c.Cache.SystemPath, c.Cache.Log = caller.SystemPath, io.Discard
			// The build deadline is never under the plain one.
			c.Remote = Remote{URL: *caller.Remote, Source: "convcache_options.remote", Enabled: true, Timeout: caller.RemoteTimeout, BuildTimeout: caller.RemoteTimeout}
		}},
		{"the caller asks for no remote tier", Request{Remote: ptr("")}, everyVariable, func(c *Config) {
			*c = everyVariableConfig()
			c.Remote = Remote{}
		}},
		{"XDG_CACHE_HOME", Request{}, map[string]string{"HOME": home, "XDG_CACHE_HOME": "/xdg"}, func(c *Config) {
			c.Path = "/xdg/convcache/cache.ccdb"
		}},
		{"a relative XDG_CACHE_HOME is not used", Request{}, map[string]string{"HOME": home, "XDG_CACHE_HOME": "xdg"}, func(*Config) {}},
		{"CONVCACHE_DISABLE over the caller's mode", caller, with(everyVariable, "CONVCACHE_DISABLE", "1"), func(c *Config) {
			*c = everyVariableConfig()
			c.Path = caller.Path
			c.Cache.Scope, c.Cache.Mode = caller.Scope, cache.ModeOff
			c.Cache.LockTimeout, c.Cache.BuildTimeout = caller.LockTimeout, caller.BuildTimeout
			c.Cache.MaxBytes, c.Cache.MaxEntries = caller.MaxBytes, caller.MaxEntries
			c.Cache.SystemPath, c.Cache.Log = caller.SystemPath, io.Discard
			// Off: no tier, no key read.
			c.Remote = Remote{URL: *caller.Remote, Source: "convcache_options.remote", Timeout: caller.RemoteTimeout, BuildTimeout: caller.RemoteTimeout, TTL: time.Hour}
		}},
		{"CONVCACHE_DISABLE over CONVCACHE_MODE: no path resolved", Request{}, with(everyVariable, "CONVCACHE_DISABLE", "true"), func(c *Config) {
			*c = everyVariableConfig()
			c.Path = ""
			c.Cache.Mode = cache.ModeOff
			c.Remote.Enabled, c.Remote.MACKey, c.Remote.ReadOnly = false, nil, false
		}},
		{"CONVCACHE_DISABLE=0", Request{}, map[string]string{"HOME": home, "CONVCACHE_DISABLE": "0", "CONVCACHE_MODE": "recache"}, func(c *Config) {
			c.Cache.Mode = cache.ModeRecache
		}},
		{"mode off needs no HOME", Request{}, map[string]string{"CONVCACHE_MODE": "off"}, func(c *Config) {
			c.Path = ""
			c.Cache.Mode = cache.ModeOff
		}},
		{"the caller's path needs no HOME", Request{Path: "/mine.ccdb"}, nil, func(c *Config) {
			c.Path = "/mine.ccdb"
		}},
		{"verbose, the log on stderr", Request{}, map[string]string{"HOME": home, "CONVCACHE_VERBOSE": "1"}, func(c *Config) {
			c.Cache.Verbose, c.Cache.Log = 1, os.Stderr
		}},
		{"a log without verbose is not opened", Request{}, map[string]string{"HOME": home, "CONVCACHE_LOG": "/dev/stdout"}, func(*Config) {}},
	} {
		lookup, w := mapEnv(t, tc.env)
		got, err := Resolve(tc.req, lookup)
		want := defaults()
		tc.want(&want)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", tc.name, got, err, want)
		}
		if w.Len() != 0 {
			t.Errorf("%s: warnings %q", tc.name, w.String())
		}
	}
}

// Each nonsense value warns once, naming its variable, and counts as
// unset.
func TestResolveNonsense(t *testing.T) {
	remote := Remote{URL: "redis://h/0", Source: "CONVCACHE_REMOTE", Enabled: true, Timeout: DefaultRemoteTimeout, BuildTimeout: DefaultRemoteBuildTimeout}
	withRemote := func(c *Config) { c.Remote = remote }
	keyless := func(c *Config) { c.Remote = remote; c.Remote.Enabled = false }
	badLog := filepath.Join(t.TempDir(), "no such directory", "x.log")
	for _, tc := range []struct {
		name, value string
		extra       []string
		want        func(*Config)
	}{
		{"CONVCACHE_DISABLE", "maybe", nil, nil},
		{"CONVCACHE_MODE", "fast", nil, nil},
		{"CONVCACHE_SCOPE", strings.Repeat("s", cache.MaxScopeSize+1), nil, nil},
		{"CONVCACHE_LOCK_TIMEOUT_MS", "0", nil, nil},
		{"CONVCACHE_LOCK_TIMEOUT_MS", "3600001", nil, nil},
		{"CONVCACHE_BUILD_TIMEOUT_MS", "-1", nil, nil},
		{"CONVCACHE_BUILD_TIMEOUT_MS", "1m", nil, nil},
		{"CONVCACHE_MAX_BYTES", "63K", nil, nil},
		{"CONVCACHE_MAX_BYTES", "2P", nil, nil},
		{"CONVCACHE_MAX_ENTRIES", "15", nil, nil},
		{"CONVCACHE_MAX_ENTRIES", "1e6", nil, nil},
		{"CONVCACHE_COMPACT_JOURNAL", "4095", nil, nil},
		{"CONVCACHE_TRUST_SHARED", "2", nil, nil},
		{"CONVCACHE_PROMOTE", "sometimes", nil, nil},
		{"CONVCACHE_VERBOSE", "3", nil, nil},
		{"CONVCACHE_VERBOSE", "-1", nil, nil},
		{"CONVCACHE_LOG", badLog, []string{"CONVCACHE_VERBOSE", "1"}, func(c *Config) {
			c.Cache.Verbose, c.Cache.Log = 1, os.Stderr
		}},
		{"CONVCACHE_REMOTE_TIMEOUT_MS", "60001", []string{"CONVCACHE_REMOTE", "redis://h/0"}, withRemote},
		{"CONVCACHE_REMOTE_TTL", "1y", []string{"CONVCACHE_REMOTE", "redis://h/0"}, withRemote},
		{"CONVCACHE_REMOTE_KEY", "short", []string{"CONVCACHE_REMOTE", "redis://h/0"}, keyless},
		{"CONVCACHE_REMOTE_KEY_FILE", badLog, []string{"CONVCACHE_REMOTE", "redis://h/0"}, keyless},
	} {
		env := with(map[string]string{"HOME": home}, append([]string{tc.name, tc.value}, tc.extra...)...)
		lookup, w := mapEnv(t, env)
		got, err := Resolve(Request{}, lookup)
		want := defaults()
		if tc.want != nil {
			tc.want(&want)
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s=%.40q:\n got %+v, %v\nwant %+v", tc.name, tc.value, got, err, want)
		}
		if out := w.String(); lines(w) != 1 || !strings.HasPrefix(out, "convcache: ignoring "+tc.name+"=") {
			t.Errorf("%s=%.40q: warnings %q, want one about it", tc.name, tc.value, out)
		}
	}
}

// A path that cannot be named is Resolve's one error, and the rest is
// resolved anyway.
func TestResolveNoPath(t *testing.T) {
	for _, env := range []map[string]string{
		{"CONVCACHE_VERBOSE": "1"},
		{"CONVCACHE_VERBOSE": "1", "HOME": "relative/home"},
	} {
		lookup, _ := mapEnv(t, env)
		cfg, err := Resolve(Request{}, lookup)
		if !errors.Is(err, cache.ErrInvalid) || !strings.Contains(err.Error(), "CONVCACHE_PATH") {
			t.Errorf("%v: error %v", env, err)
		}
		if cfg.Path != "" || cfg.Cache.Verbose != 1 || cfg.Cache.LockTimeout != cache.DefaultLockTimeout {
			t.Errorf("%v: %+v", env, cfg)
		}
	}
}

// Under AT_SECURE, secenv.Lookup (what the callers give) reads every
// variable as unset: Resolve gives the defaults whatever the environment
// says, and no default path (HOME is not read either).
func TestResolveSecure(t *testing.T) {
	old := secenv.Secure
	secenv.Secure = func() bool { return true }
	t.Cleanup(func() { secenv.Secure = old })
	for k, v := range with(everyVariable, "CONVCACHE_DISABLE", "1", "XDG_CACHE_HOME", "/xdg",
		"CONVCACHE_REMOTE_KEY_FILE", "/etc/shadow") {
		t.Setenv(k, v)
	}
	_, w := mapEnv(t, nil)
	cfg, err := Resolve(Request{}, secenv.Lookup)
	want := defaults()
	want.Path = ""
	if !reflect.DeepEqual(cfg, want) || w.Len() != 0 {
		t.Errorf("got %+v, warnings %q\nwant %+v", cfg, w.String(), want)
	}
	if !errors.Is(err, cache.ErrInvalid) || !strings.Contains(err.Error(), "AT_SECURE") {
		t.Errorf("error %v, want no path under AT_SECURE", err)
	}
	// The caller's own settings still count.
	if cfg, err := Resolve(Request{Path: "/mine.ccdb", Mode: ptr(cache.ModeReadOnly)}, secenv.Lookup); err != nil ||
		cfg.Path != "/mine.ccdb" || cfg.Cache.Mode != cache.ModeReadOnly {
		t.Errorf("the caller's settings: %+v, %v", cfg, err)
	}
}
