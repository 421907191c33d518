package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/bytesize"
	"github.com/convcache/convcache/internal/secenv"
)

// Lookup reads one environment variable: its value and whether it is set.
// secenv.Lookup is the one the callers give.
type Lookup func(name string) (string, bool)

// vars parses variables read through one Lookup. A value that does not
// parse warns once and gives the default.
type vars struct{ lookup Lookup }

func (v vars) get(name string) string {
	s, _ := v.lookup(name)
	return s
}

// trimmed is the value without the white space around it; "" is unset.
func (v vars) trimmed(name string) string { return strings.TrimSpace(v.get(name)) }

// Bool parses a boolean variable: 1/true/yes/on/y and 0/false/no/off/n, any
// case (secenv.ParseBool); unset or empty means def.
func (v vars) Bool(name string, def bool) bool {
	s := v.trimmed(name)
	if s == "" {
		return def
	}
	if b, ok := secenv.ParseBool(s); ok {
		return b
	}
	warn(name, s, "expected 1/0, true/false, yes/no or on/off", strconv.FormatBool(def))
	return def
}

// Int parses a decimal integer within [lo, hi]; unset or empty means def.
func (v vars) Int(name string, lo, hi, def int64) int64 {
	s := v.trimmed(name)
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		warn(name, s, fmt.Sprintf("expected an integer from %d to %d", lo, hi), strconv.FormatInt(def, 10))
		return def
	}
	return n
}

// Bytes parses a size such as 1048576, 512K, 64M or 2G (bytesize.Parse:
// powers of 1024) within [lo, hi]; unset or empty means def.
func (v vars) Bytes(name string, lo, hi, def int64) int64 {
	s := v.trimmed(name)
	if s == "" {
		return def
	}
	n, ok := bytesize.Parse(s)
	if !ok || n < lo || n > hi {
		warn(name, s, fmt.Sprintf("expected a size from %d to %d bytes, such as 512M or 2G", lo, hi), strconv.FormatInt(def, 10))
		return def
	}
	return n
}

// Duration parses a millisecond count within [lo, hi] ms; unset or empty
// means def.
func (v vars) Duration(name string, lo, hi int64, def time.Duration) time.Duration {
	return time.Duration(v.Int(name, lo, hi, int64(def/time.Millisecond))) * time.Millisecond
}

// Mode decides the mode: off when CONVCACHE_DISABLE is true, whatever the
// caller asked for (the kill switch wins); else the caller's mode when it
// gave one; else CONVCACHE_MODE (rw, ro, off, recache, strict, any case);
// else read-write.
func (v vars) Mode(caller *cache.Mode) cache.Mode {
	if v.Bool("CONVCACHE_DISABLE", false) {
		return cache.ModeOff
	}
	if caller != nil {
		return *caller
	}
	s := v.trimmed("CONVCACHE_MODE")
	if s == "" {
		return cache.ModeReadWrite
	}
	if m, ok := cache.ParseMode(strings.ToLower(s)); ok {
		return m
	}
	warn("CONVCACHE_MODE", s, "expected rw, ro, off, recache or strict", "rw")
	return cache.ModeReadWrite
}
