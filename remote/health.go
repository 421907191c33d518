package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The server's health: a failed call marks it down, and every call skips
// it until the writer loop's probe (ping) gets an answer; the first failure
// prints the tier's one warning line.

// fail records a failed call: it counts it, marks the server down (calls
// skip it until the writer loop's probe gets an answer) and prints the one
// warning line.
func (r *Client) fail(err error) {
	if r.closed.Load() {
		return // a call cut short by Close is not the server's fault
	}
	r.errs.Add(1)
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
	if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		s = "no answer within the timeout"
	}
	return strings.Join(strings.Fields(s), " ")
}

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

// ping asks the server for PONG within the timeout.
func (r *Client) ping(c *redis.Client) bool {
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		r.fail(err)
		return false
	}
	return true
}
