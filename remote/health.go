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

// loop is the background writer: it sends queued writes in pipelined
// batches and, while the server is down, probes it with backoff.
func (r *Client) loop(c *redis.Client) {
	defer close(r.looping)
	defer r.recoverGoroutine("writer", true)
	backoff := r.opts.MinBackoff
	r.ping(c) // connect early, so the first lookup finds a connection ready
	var batch []op
	for r.ctx.Err() == nil {
		if r.down.Load() {
			t := time.NewTimer(backoff)
			select {
			case <-r.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if r.ping(c) {
				r.down.Store(false)
				backoff = r.opts.MinBackoff
			} else {
				backoff = min(2*backoff, r.opts.MaxBackoff)
			}
			continue
		}
		batch = r.q.take(batch[:0], batchOps, batchBytes)
		if len(batch) == 0 {
			select {
			case <-r.q.wake:
			case <-r.ctx.Done():
				return
			}
			continue
		}
		r.send(c, batch)
		clear(batch) // let the records go
	}
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

// send writes one batch in a single pipeline. A network failure puts the
// batch back at the front of the queue (the writes are idempotent) and marks
// the server down; an entry the server refuses is dropped and counted.
func (r *Client) send(c *redis.Client, batch []op) {
	callHook(&testHookSend)
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
	defer cancel()
	pipe := c.Pipeline()
	cmds := make([]redis.Cmder, len(batch))
	for i := range batch {
		o := &batch[i]
		switch o.kind {
		case opSet:
			cmds[i] = pipe.Set(ctx, o.key, o.rec, r.opts.TTL)
		case opUnlock:
			cmds[i] = pipe.Eval(ctx, unlockScript, []string{o.key}, o.rec)
		}
	}
	pipe.Exec(ctx)
	var refused error
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil && !isServerError(err) {
			if n := r.q.requeue(batch); n > 0 {
				r.dropped.Add(uint64(n))
			}
			r.fail(err)
			return
		}
	}
	for i, cmd := range cmds {
		err := cmd.Err()
		switch {
		case err != nil:
			refused = err
			if batch[i].kind == opSet {
				r.dropped.Add(1)
			}
		case batch[i].kind == opSet:
			r.writes.Add(1)
		}
	}
	r.q.done()
	if refused != nil {
		r.fail(refused) // such as OOM or READONLY: back off like a failure
	}
}

// quietLogger drops go-redis's own log lines: the tier prints its one
// warning itself.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...interface{}) {}

var silenceOnce sync.Once

func silenceLibraryLog() {
	silenceOnce.Do(func() { redis.SetLogger(quietLogger{}) })
}
