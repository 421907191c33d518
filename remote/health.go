package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The server's health. A plain call (a lookup within Timeout) that fails
// marks it down: plain calls skip it until the writer loop's probe (ping,
// within BuildTimeout) gets an answer. A server that does not answer even
// within BuildTimeout, or that refuses the connection, is also marked
// unreachable: then the calls for a key about to be built skip it too, and
// the writer only probes. One slow answer to a plain lookup thus never
// keeps a node from waiting for another's build. The first failure prints
// the tier's one warning line.

// fail records a failed plain call: it counts it, marks the server down,
// and unreachable unless it was only too slow, and prints the one warning
// line.
func (r *Client) fail(err error) { r.failed(err, !timedOut(err)) }

// failSlow records a failed call made within BuildTimeout: the server is
// unreachable.
func (r *Client) failSlow(err error) { r.failed(err, true) }

// skip reports whether a call skips the server: a plain one while it is
// down, one for a build while it is unreachable.
func (r *Client) skip(build bool) bool {
	if build {
		return r.unreachable.Load()
	}
	return r.down.Load()
}

// timeout is a call's deadline: BuildTimeout for a build's, else Timeout.
func (r *Client) timeout(build bool) time.Duration {
	if build {
		return r.opts.BuildTimeout
	}
	return r.opts.Timeout
}

// failCall records the failure of a plain call or of a build's.
func (r *Client) failCall(err error, build bool) {
	if build {
		r.failSlow(err)
	} else {
		r.fail(err)
	}
}

func (r *Client) failed(err error, unreachable bool) {
	if r.closed.Load() {
		return // a call cut short by Close is not the server's fault
	}
	r.errs.Add(1)
	if unreachable {
		r.unreachable.Store(true)
	}
	if !r.down.Swap(true) {
		select {
		case r.q.wake <- struct{}{}: // the loop starts probing
		default:
		}
	}
	if !r.warned.Swap(true) {
		r.warnOnce(err)
	}
}

var (
	warnedMu  sync.Mutex
	warnedURL = map[string]bool{}
)

func (r *Client) warnOnce(err error) {
	msg := fmt.Sprintf("convcache: remote cache %s is unavailable (%s); continuing with the local cache only, and reconnecting in the background\n",
		r.display, oneLine(err))
	if !r.unreachable.Load() {
		msg = fmt.Sprintf("convcache: remote cache %s is slow (%s); plain lookups go on without it until it answers a probe, "+
			"lookups that would start a benchmark still wait for it up to %v\n", r.display, oneLine(err), r.opts.BuildTimeout)
	}
	if r.opts.Warn != nil {
		io.WriteString(r.opts.Warn, msg)
		return
	}
	warnedMu.Lock()
	defer warnedMu.Unlock()
	if !warnedURL[r.display] {
		warnedURL[r.display] = true
		io.WriteString(os.Stderr, msg)
	}
}

func oneLine(err error) string {
	s := err.Error()
	if timedOut(err) {
		s = "no answer within the timeout"
	}
	return strings.Join(strings.Fields(s), " ")
}

// timedOut reports whether err is a call's deadline passing.
func timedOut(err error) bool { return errors.Is(err, context.DeadlineExceeded) || isTimeout(err) }

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// isServerError reports whether err is an error reply from the server (the
// command was understood and refused), as opposed to a network failure.
func isServerError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil)
}

// ping asks the server for PONG within the build timeout; an answer
// clears both marks.
func (r *Client) ping(c *redis.Client) bool {
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.BuildTimeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		r.failSlow(err)
		return false
	}
	r.unreachable.Store(false)
	r.down.Store(false)
	return true
}
