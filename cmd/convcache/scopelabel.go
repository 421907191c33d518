package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/convcache/convcache/internal/cachefile"
)

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
func scopeList(es []cachefile.Entry) string {
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
