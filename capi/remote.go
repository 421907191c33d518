package main

import (
	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/config"
	"github.com/convcache/convcache/remote"
)

// openRemote builds the remote tier that config.Resolve settled on, or
// returns nil (no tier) when it settled on none. A URL that cannot be used
// prints one warning line, naming where it came from, and returns nil: the
// cache then works with its local file only, as for any nonsense setting.
// It does not connect; the tier connects on first use and fails open from
// then on.
func openRemote(s config.Remote) cache.Remote {
	if !s.Enabled {
		return nil
	}
	r, err := remote.New(remote.OptionsFor(s))
	if err != nil {
		config.WarnRemote(s.Source, s.URL, err)
		return nil
	}
	return r
}
