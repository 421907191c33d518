package main

import (
	"io"

	"github.com/convcache/convcache/internal/config"
	"github.com/convcache/convcache/internal/secenv"
)

// libraryConfig is the configuration a library handle opened without
// options gets from this environment (config.Resolve), so that the tool's
// defaults are the library's: the mode, bounds, lock timeout, system tier
// and remote tier that stats reports, and the default of --lock-timeout.
//
// The cache path is not taken from it: each command takes a PATH, else
// cache.DefaultPath (the rule Resolve applies), and reports a missing one
// itself. CONVCACHE_LOG is not opened: the tool writes no verbose log.
// withRemote resolves the remote tier too, as the library would, its
// record key included (a key that cannot be used warns, as it would in the
// library); without it no tier is asked for, so that commands that never
// use one read no key file.
func libraryConfig(withRemote bool) config.Config {
	req := config.Request{Log: io.Discard}
	if !withRemote {
		none := ""
		req.Remote = &none
	}
	cfg, _ := config.Resolve(req, secenv.Lookup) // the error is the path's: see above
	return cfg
}
