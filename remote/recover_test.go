package remote_test

import (
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/remote"
	"github.com/convcache/convcache/remote/internal/redistest"
)

func fakeServer(t *testing.T) *redistest.Fake {
	f, err := redistest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// A panic in the writer loop is recovered and reported; the tier then
// fails open for good, and the host process lives on.
func TestWriterPanic(t *testing.T) {
	f := fakeServer(t)
	remote.SetHooks(func() { panic("injected writer panic") }, nil)
	t.Cleanup(func() { remote.SetHooks(nil, nil) })
	r, warn := newRemote(t, f.URL(), nil)
	r.Put("s", []byte("k"), []byte("v"))
	if !waitFor(10*time.Second, func() bool { return strings.Contains(warn.String(), "injected writer panic") }) {
		t.Fatalf("no report: %q", warn.String())
	}
	w := warn.String()
	if !strings.Contains(w, "internal error in the remote tier's writer (please report)") ||
		!strings.Contains(w, "the remote tier is off for this process") || !strings.Contains(w, "goroutine") {
		t.Fatalf("report %q", w)
	}
	if !r.Down() || r.Stats().Errors == 0 {
		t.Fatalf("after the panic: down %v, %+v", r.Down(), r.Stats())
	}
	remote.SetHooks(nil, nil)
	// Off: lookups miss, writes are dropped, locks granted, at once.
	if _, ok := r.Get("s", []byte("k")); ok {
		t.Fatal("a hit from a dead tier")
	}
	before := r.Stats().Dropped
	r.Put("s", []byte("k2"), []byte("v"))
	if r.Stats().Dropped != before+1 || r.Queued() != 0 {
		t.Fatalf("a write to a dead tier: %+v, %d queued", r.Stats(), r.Queued())
	}
	if unlock, ok := r.TryLock("s", []byte("k")); !ok {
		t.Fatal("a dead tier refused a lock")
	} else {
		unlock()
	}
	r.Flush()
	r.Close()
}

// A panic in a lock renewal is recovered and reported; the tier goes on.
func TestRenewPanic(t *testing.T) {
	f := fakeServer(t)
	remote.SetHooks(nil, func() { panic("injected renewal panic") })
	t.Cleanup(func() { remote.SetHooks(nil, nil) })
	r, warn := newRemote(t, f.URL(), func(o *remote.Options) { o.LockTTL = 3 * time.Millisecond })
	unlock, ok := r.TryLock("s", []byte("k"))
	if !ok {
		t.Fatal("lock refused")
	}
	if !waitFor(10*time.Second, func() bool { return strings.Contains(warn.String(), "injected renewal panic") }) {
		t.Fatalf("no report: %q", warn.String())
	}
	if w := warn.String(); !strings.Contains(w, "internal error in the remote tier's lock renewal (please report)") ||
		!strings.Contains(w, "the lock it renews will lapse") {
		t.Fatalf("report %q", w)
	}
	unlock()
	remote.SetHooks(nil, nil)
	r.Put("s", []byte("k"), []byte("v"))
	r.Flush()
	if v, ok := r.Get("s", []byte("k")); !ok || string(v) != "v" {
		t.Fatalf("the tier after a renewal panic: %q %v %+v", v, ok, r.Stats())
	}
}
