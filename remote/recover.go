package remote

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync/atomic"
)

// Test hooks: called, when set, where the writer loop sends a batch and
// where a lock renewal ticks, so that tests can make those goroutines panic.
var testHookSend, testHookRenew atomic.Pointer[func()]

func callHook(h *atomic.Pointer[func()]) {
	if f := h.Load(); f != nil {
		(*f)()
	}
}

// recoverGoroutine is deferred first in every goroutine the tier starts. A
// panic there would end the host process, since no exported function's
// recover is on that stack. It reports the panic with its stack on the
// warning output and counts an error. A panic in the writer loop (writer
// true) turns the tier off for this process, failing open: lookups miss,
// writes are dropped, locks are granted; the loop, which probes the server
// and sends the writes, is gone. A panic in a lock renewal ends only that
// renewal: the lock lapses at its TTL.
func (r *Client) recoverGoroutine(what string, writer bool) {
	p := recover()
	if p == nil {
		return
	}
	r.errs.Add(1)
	consequence := "the lock it renews will lapse"
	if writer {
		r.dead.Store(true)
		r.down.Store(true) // Flush and Close stop waiting for the queue
		r.dropped.Add(uint64(r.q.drain()))
		consequence = "the remote tier is off for this process"
	}
	var w io.Writer = os.Stderr
	if r.opts.Warn != nil {
		w = r.opts.Warn
	}
	fmt.Fprintf(w, "convcache: internal error in the remote tier's %s (please report): %v; %s\n%s",
		what, p, consequence, debug.Stack())
}
