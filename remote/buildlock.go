package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/convcache/convcache/cache"
)

// Scripts run by Redis on a lock key: delete or renew it only while it
// holds our token, so that a holder whose lock expired and went to another
// node never frees or extends that node's lock.
const (
	unlockScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`
	renewScript  = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`
)

func noop() {}

// TryLock takes the cluster build lock of (scope, key) with SET NX PX. It
// returns false while another node holds it. When the server is down, slow
// or read-only mode is on, it grants the lock without holding anything.
//
// While held, the lock is renewed every third of its TTL. unlock stops the
// renewal and queues the release behind the writes already queued, so that
// a node that takes the lock next finds the value this one just put.
func (r *Client) TryLock(scope string, key []byte) (unlock func(), ok bool) {
	return r.tryLock(scope, key, false)
}

// TryLockBuild is TryLock for the caller about to build: it waits up to the
// build timeout, and grants the lock unasked only while the server is
// marked unreachable (health.go). Its unlock waits, up to the build
// timeout, until the writes queued before it and the release are sent.
func (r *Client) TryLockBuild(scope string, key []byte) (unlock func(), ok bool) {
	return r.tryLock(scope, key, true)
}

func (r *Client) tryLock(scope string, key []byte, build bool) (unlock func(), ok bool) {
	if r.opts.ReadOnly || len(scope) > cache.MaxScopeSize || len(key) > cache.MaxKeySize || r.skip(build) {
		return noop, true
	}
	c := r.conn()
	if c == nil {
		return noop, true
	}
	lk := lockKey(r.opts.Prefix, scope, key)
	token := r.newToken()
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout(build))
	err := c.Do(ctx, "SET", lk, token, "NX", "PX", r.opts.LockTTL.Milliseconds()).Err()
	cancel()
	if errors.Is(err, redis.Nil) {
		return nil, false // held by another node
	}
	if err != nil {
		r.failCall(err, build)
		return noop, true
	}
	stop := make(chan struct{})
	go r.renew(c, lk, token, stop)
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			if !r.closed.Load() {
				r.q.push(op{kind: opUnlock, key: lk, rec: []byte(token)})
				if build {
					// Publish the value and the release before the
					// builder goes on: a process that exits next (its
					// last graph) would leave the other nodes waiting for
					// the lock to expire, then building it again.
					r.flushUntil(time.Now().Add(r.opts.BuildTimeout))
				}
			}
		})
	}, true
}

func (r *Client) newToken() string {
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", r.tokenBase, r.tokens.Add(1), hex.EncodeToString(b[:]))
}

// renew extends a held lock until stop is closed or the client closes.
func (r *Client) renew(c *redis.Client, lk, token string, stop <-chan struct{}) {
	defer r.recoverGoroutine("lock renewal", false)
	t := time.NewTicker(r.opts.LockTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-r.ctx.Done():
			return
		case <-t.C:
			callHook(&testHookRenew)
			ctx, cancel := context.WithTimeout(r.ctx, r.opts.BuildTimeout)
			c.Eval(ctx, renewScript, []string{lk}, token, r.opts.LockTTL.Milliseconds())
			cancel()
		}
	}
}
