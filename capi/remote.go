package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/config"
	"github.com/convcache/convcache/remote"
)

// openRemote builds the remote tier that o asks for: o.remote NULL means
// $CONVCACHE_REMOTE, "" means none; o.remote_timeout_ms 0 means
// $CONVCACHE_REMOTE_TIMEOUT_MS or remote.DefaultTimeout. It returns nil
// (no tier) for mode off, and for a URL or timeout that cannot be used:
// then one warning line is printed and the cache works with its local file
// only, as for any nonsense setting. A record MAC key asked for
// ($CONVCACHE_REMOTE_KEY_FILE, $CONVCACHE_REMOTE_KEY) that cannot be used
// is such a setting too: without it the tier would trust what the key was
// meant to check. It does not connect; the tier connects on first use and
// fails open from then on.
func openRemote(o *C.convcache_options, mode cache.Mode) cache.Remote {
	name, url := "CONVCACHE_REMOTE", ""
	if o.remote == nil {
		url = config.RemoteURL()
	} else {
		name, url = "convcache_options.remote", C.GoString(o.remote)
	}
	if url == "" || mode == cache.ModeOff {
		return nil
	}
	ro := remote.Options{URL: url, ReadOnly: mode == cache.ModeReadOnly}
	switch ms := int64(o.remote_timeout_ms); {
	case ms > 0 && ms <= config.MaxRemoteTimeoutMs:
		ro.Timeout = time.Duration(ms) * time.Millisecond
	case ms != 0:
		config.WarnOption("convcache_options.remote_timeout_ms", strconv.FormatInt(ms, 10),
			fmt.Sprintf("expected 1 to %d", config.MaxRemoteTimeoutMs), "$CONVCACHE_REMOTE_TIMEOUT_MS or the default")
	}
	ro = config.Remote(ro)
	key, ok := config.RemoteMACKey()
	if !ok {
		return nil
	}
	ro.MACKey = key
	r, err := remote.New(ro)
	if err != nil {
		config.WarnRemote(name, url, err)
		return nil
	}
	return r
}
