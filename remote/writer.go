package remote

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/convcache/convcache/cache"
)

// Write-behind: Put queues a record, the writer loop sends queued records
// in pipelined batches (and probes the server while it is down), Flush
// waits for them.

// Sizes of one pipelined write batch.
const (
	batchOps   = 256
	batchBytes = 1 << 20
)

// Put queues (scope, key, value) to be written in the background. It copies
// its arguments and never blocks: when the queue is full the oldest entry is
// dropped and counted.
func (r *Client) Put(scope string, key, value []byte) {
	if r.opts.ReadOnly {
		return
	}
	if len(scope) > cache.MaxScopeSize || len(key) == 0 || len(key) > cache.MaxKeySize || len(value) > r.opts.MaxValue {
		r.dropped.Add(1)
		return
	}
	if r.conn() == nil {
		r.dropped.Add(1)
		return
	}
	rec := appendRecord(make([]byte, 0, recordSize(scope, key, value, r.mac != nil)), scope, key, value, time.Now().UnixMilli(), r.mac)
	if n := r.q.push(op{kind: opSet, key: entryKey(r.opts.Prefix, scope, key), rec: rec}); n > 0 {
		r.dropped.Add(uint64(n))
	}
}

// Flush waits until the writes queued before the call are sent, at most the
// timeout. It returns nil even when they are not: the tier fails open, and
// its warning and counters report trouble. It returns at once while the
// server is marked unreachable.
func (r *Client) Flush() error {
	if r.closed.Load() || r.rdb.Load() == nil {
		return nil
	}
	r.flushUntil(time.Now().Add(r.opts.Timeout))
	return nil
}

// FlushUntil waits until the writes queued before the call are sent, at
// most until deadline; at once while the server is marked unreachable.
func (r *Client) FlushUntil(deadline time.Time) {
	if r.closed.Load() || r.rdb.Load() == nil {
		return
	}
	r.flushUntil(deadline)
}

// BuildTimeout is the deadline of the calls for a key about to be built.
func (r *Client) BuildTimeout() time.Duration { return r.opts.BuildTimeout }

func (r *Client) flushUntil(deadline time.Time) {
	mark := r.q.mark()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		done, progress := r.q.finished(mark)
		if done || r.unreachable.Load() {
			return
		}
		select {
		case <-progress:
		case <-t.C:
			return
		}
	}
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

// send writes one batch in a single pipeline. A network failure puts the
// batch back at the front of the queue (the writes are idempotent) and marks
// the server down; an entry the server refuses is dropped and counted.
func (r *Client) send(c *redis.Client, batch []op) {
	callHook(&testHookSend)
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.BuildTimeout)
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
			r.failSlow(err)
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
