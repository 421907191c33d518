package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/cudnn"
	"github.com/convcache/convcache/internal/config"
)

// maxDevices bounds the device ordinals probed.
const maxDevices = 64

// probeDevices reads the fingerprint of every CUDA device, in ordinal order.
// It fails (wrapping cudnn.ErrUnavailable) when device 0 cannot be read;
// a later device that fails for another reason than not existing is
// reported in partial.
func probeDevices() (devs []cudnn.Device, partial error, err error) {
	for i := 0; i < maxDevices; i++ {
		d, err := cudnn.Probe(i)
		if err != nil {
			if i == 0 {
				return nil, nil, err
			}
			if errors.Is(err, cudnn.ErrNoDevice) { // past the last device
				break
			}
			return devs, fmt.Errorf("device %d: %w", i, err), nil
		}
		devs = append(devs, d)
	}
	return devs, nil, nil
}

// currentScopes returns this machine's scopes: $CONVCACHE_SCOPE when set,
// else the fingerprint of each device (devices of one model share one).
func currentScopes() ([]string, error) {
	if s, _ := config.LookupEnv("CONVCACHE_SCOPE"); s != "" {
		return []string{s}, nil
	}
	devs, _, err := probeDevices()
	if err != nil {
		return nil, &exitErr{exitNoDevice, fmt.Errorf("no fingerprint for scope \"current\": %s; or name the scopes instead (convcache stats lists them)", deviceReason(err))}
	}
	tag, _ := config.LookupEnv("CONVCACHE_TAG")
	var out []string
	seen := map[string]bool{}
	for _, d := range devs {
		s := d.Scope(tag)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// scopeFilter selects entries by scope. A nil filter selects every scope.
type scopeFilter struct {
	hashes map[uint64]bool
	names  []string // what each spec resolved to, for messages
}

// newScopeFilter parses --scope values: a scope name, "current" (this
// machine's scopes), or "#" and the 16 hex digits of a scope's hash (for
// scopes the file never named). It returns nil for no values.
func newScopeFilter(specs []string) (*scopeFilter, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	f := &scopeFilter{hashes: map[uint64]bool{}}
	for _, s := range specs {
		switch {
		case s == "current":
			cur, err := currentScopes()
			if err != nil {
				return nil, err
			}
			for _, c := range cur {
				f.hashes[cache.ScopeHash(c)] = true
				f.names = append(f.names, c)
			}
		case strings.HasPrefix(s, "#"):
			h, err := strconv.ParseUint(s[1:], 16, 64)
			if err != nil || len(s) != 17 {
				return nil, usageErr("scope %q: a hash is # and 16 hex digits, as convcache stats prints it", s)
			}
			f.hashes[h] = true
			f.names = append(f.names, s)
		case s == "":
			return nil, usageErr("empty scope name: give a name, current, or #HASH")
		default:
			f.hashes[cache.ScopeHash(s)] = true
			f.names = append(f.names, s)
		}
	}
	return f, nil
}

func (f *scopeFilter) match(h uint64) bool { return f == nil || f.hashes[h] }

func (f *scopeFilter) String() string {
	if f == nil {
		return "every scope"
	}
	return strings.Join(f.names, ", ")
}

// scopeLabel names a scope for people, in text output: its name, with
// control characters escaped (a name is read from the file, and may hold
// terminal escapes), or its hash when the file never named it.
func scopeLabel(name string, hash uint64) string {
	if name == "" {
		return fmt.Sprintf("(unnamed #%016x)", hash)
	}
	return safeText(name)
}

func hashText(h uint64) string { return fmt.Sprintf("#%016x", h) }

// scopeList lists the scopes of entries, for messages.
func scopeList(es []cache.Entry) string {
	seen := map[uint64]string{}
	for _, e := range es {
		seen[e.ScopeHash] = scopeLabel(e.Scope, e.ScopeHash)
	}
	var names []string
	for _, n := range seen {
		names = append(names, strconv.Quote(n))
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
