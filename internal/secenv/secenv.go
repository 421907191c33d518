package secenv

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// source reads one variable. The C library replaces it with one that reads
// the live C environment (SetSource).
var source atomic.Pointer[func(string) (string, bool)]

// SetSource makes Lookup read variables through f (which must itself
// honour AT_SECURE, as the C library's does); nil restores os.LookupEnv.
func SetSource(f func(string) (string, bool)) {
	if f == nil {
		source.Store(nil)
		return
	}
	source.Store(&f)
}

// Lookup reads one environment variable; under AT_SECURE every variable is
// unset.
func Lookup(name string) (string, bool) {
	if Secure() {
		return "", false
	}
	if f := source.Load(); f != nil {
		return (*f)(name)
	}
	return os.LookupEnv(name)
}

// Get is Lookup without the second result.
func Get(name string) string {
	v, _ := Lookup(name)
	return v
}

// Secure reports whether the process runs with AT_SECURE set. It is
// decided once: the kernel sets it at exec.
var Secure = sync.OnceValue(func() bool {
	for _, f := range []func() (bool, bool){getauxvalSecure, runtimeAuxvSecure, procAuxvSecure} {
		if secure, ok := f(); ok {
			return secure
		}
	}
	return idsDiffer()
})

// ParseBool parses a boolean value as every convcache variable spells it:
// 1/true/yes/on/y and 0/false/no/off/n, any case, spaces around ignored.
// ok is false for anything else, and for an empty value.
func ParseBool(v string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on", "y":
		return true, true
	case "0", "false", "no", "off", "n":
		return false, true
	}
	return false, false
}
