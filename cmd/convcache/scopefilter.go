package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/convcache/convcache/cudnn"
	"github.com/convcache/convcache/internal/cachefile"
)

// currentScopes returns this machine's scopes, as the library names them
// (cudnn.Scopes): $CONVCACHE_SCOPE, else each device's fingerprint.
func currentScopes() ([]string, error) {
	scopes, err := cudnn.Scopes()
	if err != nil {
		return nil, &exitErr{exitNoDevice, fmt.Errorf("no fingerprint for scope \"current\": %s; or name the scopes instead (convcache stats lists them)", deviceReason(err))}
	}
	return scopes, nil
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
				f.hashes[cachefile.ScopeHash(c)] = true
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
			f.hashes[cachefile.ScopeHash(s)] = true
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
