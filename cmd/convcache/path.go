package main

import (
	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
)

// cachePath returns the optional PATH argument (atMostOnePath checked
// that there is at most one), or the default cache file, resolved as the
// engine resolves it.
func cachePath(args []string) (string, error) {
	p := ""
	if len(args) == 1 {
		p = args[0]
	}
	return resolve(p)
}

// resolve returns path, or the default cache file when it is empty, as the
// engine resolves it.
func resolve(path string) (string, error) {
	if path == "" {
		p, err := cache.DefaultPath()
		if err != nil {
			return "", withCode(exitUsage, "%v", err)
		}
		path = p
	}
	return cachefile.ResolvePath(path)
}
