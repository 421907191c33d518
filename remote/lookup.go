package remote

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/convcache/convcache/cache"
)

// Get returns the value stored for (scope, key). A miss, an error, a value
// that fails its checks, or a server marked down all return false; no call
// waits longer than the timeout.
func (r *Client) Get(scope string, key []byte) ([]byte, bool) { return r.get(scope, key, false) }

// GetBuild is Get for a key that the caller builds on a miss: it waits up
// to the build timeout, and skips only a server marked unreachable (health.go).
func (r *Client) GetBuild(scope string, key []byte) ([]byte, bool) { return r.get(scope, key, true) }

func (r *Client) get(scope string, key []byte, build bool) ([]byte, bool) {
	if len(scope) > cache.MaxScopeSize || len(key) > cache.MaxKeySize || r.skip(build) {
		return nil, false
	}
	c := r.conn()
	if c == nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout(build))
	defer cancel()
	// GETRANGE rather than GET bounds what a foreign, huge value costs: at
	// most maxRecord+1 bytes are read. A missing key reads as "".
	rec, err := c.GetRange(ctx, entryKey(r.opts.Prefix, scope, key), 0, int64(r.maxRecord)).Bytes()
	switch {
	case err != nil && redis.HasErrorPrefix(err, "WRONGTYPE"):
		r.rejected.Add(1) // not a string: something else wrote that key
		return nil, false
	case err != nil:
		r.failCall(err, build)
		return nil, false
	case len(rec) == 0:
		r.misses.Add(1)
		return nil, false
	case len(rec) > r.maxRecord:
		r.rejected.Add(1)
		return nil, false
	}
	v, _, err := parseRecord(rec, scope, key, r.opts.MaxValue, r.mac)
	if err != nil {
		r.rejected.Add(1)
		return nil, false
	}
	r.hits.Add(1)
	return v, true
}
