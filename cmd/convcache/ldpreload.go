package main

import "strings"

// How glibc's dynamic loader reads LD_PRELOAD (elf/rtld.c,
// handle_preload_list): it splits the value at spaces and colons, and at
// nothing else (strcspn(p, " :")); it skips an empty name, and it ignores a
// name of PATH_MAX (4096) bytes or more. A tab, a newline or any other
// byte is part of a name.
const (
	preloadSeparators = " :"
	preloadNameMax    = 4096
)

// preloadNames returns the names the loader tries, in order, for an
// LD_PRELOAD value.
func preloadNames(v string) []string {
	var out []string
	for _, n := range strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(preloadSeparators, r) }) {
		if len(n) < preloadNameMax {
			out = append(out, n)
		}
	}
	return out
}

// appendPreload adds lib at the end of an LD_PRELOAD value, keeping what is
// there. A value whose names include lib exactly is kept as it is: the
// loader loads lib already.
func appendPreload(cur, lib string) (string, error) {
	if strings.ContainsAny(lib, preloadSeparators) {
		return "", withCode(exitRunFailed, "%s: LD_PRELOAD cannot name a path with a colon or a space; move the interposer or link to it from another path", lib)
	}
	if len(lib) >= preloadNameMax {
		return "", withCode(exitRunFailed, "%.64s...: a path of %d bytes; the dynamic loader ignores an LD_PRELOAD name of %d bytes or more; move the interposer or link to it from a shorter path",
			lib, len(lib), preloadNameMax)
	}
	for _, p := range preloadNames(cur) {
		if p == lib {
			return cur, nil
		}
	}
	if strings.Trim(cur, preloadSeparators) == "" { // no names: nothing to keep
		return lib, nil
	}
	return cur + ":" + lib, nil
}
