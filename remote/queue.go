package remote

import "sync"

// opKind is what a queued operation does.
type opKind uint8

const (
	opSet    opKind = iota // SET key record [PX ttl]
	opUnlock               // delete a build lock if it still holds our token
)

// op is one queued write. Its fields are owned by the queue: Put copies the
// caller's bytes into rec.
type op struct {
	kind opKind
	key  string
	rec  []byte // the record (opSet) or the lock token (opUnlock)
	seq  uint64
}

func (o *op) size() int { return len(o.key) + len(o.rec) + 64 }

// queue is the bounded write-behind queue: a FIFO that drops its oldest
// entries to make room, so that a producer never waits. One consumer (the
// writer loop) takes batches from the front; a batch that could not be sent
// goes back to the front.
type queue struct {
	mu       sync.Mutex
	ops      []op // ring buffer of cap maxOps
	head, n  int
	bytes    int64
	maxOps   int
	maxBytes int64
	nextSeq  uint64 // sequence number of the next op queued
	inflight uint64 // lowest sequence number taken but not finished; 0 = none
	progress chan struct{}
	wake     chan struct{} // capacity 1: "there is work"
}

func newQueue(maxOps int, maxBytes int64) *queue {
	return &queue{
		ops:      make([]op, maxOps),
		maxOps:   maxOps,
		maxBytes: maxBytes,
		nextSeq:  1,
		progress: make(chan struct{}),
		wake:     make(chan struct{}, 1),
	}
}

// push appends o, dropping the oldest entries while the queue is over its
// bounds. It returns the number of dropped opSet entries (dropped unlocks
// are not writes: the lock's TTL frees it).
func (q *queue) push(o op) (dropped int) {
	q.mu.Lock()
	o.seq = q.nextSeq
	q.nextSeq++
	for q.n > 0 && (q.n == q.maxOps || q.bytes+int64(o.size()) > q.maxBytes) {
		if q.popFrontLocked().kind == opSet {
			dropped++
		}
	}
	q.ops[(q.head+q.n)%q.maxOps] = o
	q.n++
	q.bytes += int64(o.size())
	q.mu.Unlock()
	if dropped > 0 {
		q.signalProgress()
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return dropped
}

func (q *queue) popFrontLocked() op {
	o := q.ops[q.head]
	q.ops[q.head] = op{}
	q.head = (q.head + 1) % q.maxOps
	q.n--
	q.bytes -= int64(o.size())
	return o
}

// take removes up to maxOps entries (and about maxBytes) from the front.
// They count as in flight until done or requeue.
func (q *queue) take(dst []op, maxOps int, maxBytes int64) []op {
	q.mu.Lock()
	defer q.mu.Unlock()
	var b int64
	for q.n > 0 && len(dst) < maxOps && (len(dst) == 0 || b+int64(q.ops[q.head].size()) <= maxBytes) {
		o := q.popFrontLocked()
		b += int64(o.size())
		dst = append(dst, o)
	}
	if len(dst) > 0 {
		q.inflight = dst[0].seq
	}
	return dst
}

// done marks the batch taken last as finished (sent, or given up).
func (q *queue) done() {
	q.mu.Lock()
	q.inflight = 0
	q.mu.Unlock()
	q.signalProgress()
}

// requeue puts an unsent batch back at the front, as far as the bounds
// allow (newer entries win, as with push), and returns the number of opSet
// entries that did not fit.
func (q *queue) requeue(batch []op) (dropped int) {
	q.mu.Lock()
	for i := len(batch) - 1; i >= 0; i-- {
		o := batch[i]
		if q.n == q.maxOps || q.bytes+int64(o.size()) > q.maxBytes {
			for _, old := range batch[:i+1] {
				if old.kind == opSet {
					dropped++
				}
			}
			break
		}
		q.head = (q.head - 1 + q.maxOps) % q.maxOps
		q.ops[q.head] = o
		q.n++
		q.bytes += int64(o.size())
	}
	q.inflight = 0
	q.mu.Unlock()
	q.signalProgress()
	return dropped
}

// drain empties the queue and returns the number of opSet entries removed.
func (q *queue) drain() (dropped int) {
	q.mu.Lock()
	for q.n > 0 {
		if q.popFrontLocked().kind == opSet {
			dropped++
		}
	}
	q.mu.Unlock()
	q.signalProgress()
	return dropped
}

// mark returns the sequence number of the newest entry queued so far.
func (q *queue) mark() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.nextSeq - 1
}

// finished reports whether every entry up to seq has been sent or dropped,
// and returns a channel closed at the next progress.
func (q *queue) finished(seq uint64) (bool, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	low := q.nextSeq // lowest sequence number not yet finished
	if q.n > 0 {
		low = q.ops[q.head].seq
	}
	if q.inflight != 0 && q.inflight < low {
		low = q.inflight
	}
	return low > seq, q.progress
}

func (q *queue) signalProgress() {
	q.mu.Lock()
	close(q.progress)
	q.progress = make(chan struct{})
	q.mu.Unlock()
}

// len returns the number of queued entries.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}
