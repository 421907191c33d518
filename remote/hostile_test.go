package remote_test

import (
	"bytes"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/remote"
	"github.com/convcache/convcache/remote/internal/redistest"
)

// hostileReplies are replies no honest server sends, each announcing or
// carrying more than the tier accepts. want is in the warning they cause.
var hostileReplies = []struct {
	name        string
	reply, unit string // unit, if set, follows again and again
	want        string
}{
	{"1 TiB bulk string", "$1099511627776\r\n", "", "a bulk string of 1099511627776 bytes"},
	{"2^31-element array", "*2147483648\r\n", "", "an array of 2147483648 elements"},
	{"RESP3 map of 2^31-1 pairs", "%2147483647\r\n", "", "is not RESP2"},
	{"deep nesting", "", "*1\r\n", "arrays nested deeper than"},
	{"arrays of arrays", "", "*1000\r\n", "elements (a reply holds at most 1024)"},
	{"endless line", "+", strings.Repeat("a", 64<<10), "a line longer than"},
	{"endless bulk strings", "*1000\r\n", "$65536\r\n" + strings.Repeat("b", 65536) + "\r\n", "a bulk string of 65536 bytes"},
	{"bad length", "$-5\r\n", "", "a bad length"},
	{"garbage", "\x00\xff garbage\r\n", "", "is not RESP2"},
}

// hostileCalls are the tier's calls, each with the command a hostile reply
// answers and what the call does while the server is hostile.
var hostileCalls = []struct {
	command string
	call    func(t *testing.T, r *remote.Client, c *cache.Cache)
}{
	// HELLO is the first command on every new connection.
	{"HELLO", lookupMisses},
	{"GETRANGE", lookupMisses},
	// PING is the writer loop's first command, and its probe.
	{"PING", lookupMisses},
	// SET answers TryLock (a reply of any type) and the pipelined writes.
	{"SET", func(t *testing.T, r *remote.Client, c *cache.Cache) {
		if unlock, ok := r.TryLock("test-scope", key(2)); !ok {
			t.Fatal("a lock was refused by a failing server")
		} else {
			unlock()
		}
	}},
	{"SET", func(t *testing.T, r *remote.Client, c *cache.Cache) { r.Put("test-scope", key(3), value(3)) }},
}

// goRedisRefusals are the errors go-redis returns, before it allocates,
// for a reply whose shape does not fit the command: an array where it reads
// a string, and an odd-length array where it reads a map (HELLO).
var goRedisRefusals = []string{"can't parse reply", "the length of the array must be a multiple of 2"}

func goRedisRefused(warning string) bool {
	for _, r := range goRedisRefusals {
		if strings.Contains(warning, r) {
			return true
		}
	}
	return false
}

func lookupMisses(t *testing.T, r *remote.Client, c *cache.Cache) {
	if v, ok := find(t, c, key(1)); ok {
		t.Fatalf("a hit from a hostile server: %q", v)
	}
}

// A hostile server's reply fails the call, the tier fails open (a miss,
// counted in Errors, one warning naming the bound), no large allocation
// happens, and once the server behaves the tier works again.
func TestHostileServer(t *testing.T) {
	f, err := redistest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	for _, hc := range hostileCalls {
		for _, hr := range hostileReplies {
			t.Run(hc.command+"/"+hr.name, func(t *testing.T) {
				r, warn := newRemote(t, f.URL(), func(o *remote.Options) {
					o.Timeout = 10 * time.Second // the bound trips, not the deadline
					o.MinBackoff, o.MaxBackoff = time.Millisecond, 10*time.Millisecond
				})
				c := openCache(t, filepath.Join(t.TempDir(), "c.ccdb"), r, cache.ModeReadWrite)
				f.Answer(hc.command, 1, []byte(hr.reply), []byte(hr.unit))
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				hc.call(t, r, c)
				// fail() counts the error, then writes the warning.
				if !waitFor(10*time.Second, func() bool { return r.Stats().Errors > 0 && warn.lines() > 0 }) {
					t.Fatalf("no error counted or reported: %+v %q", r.Stats(), warn)
				}
				runtime.ReadMemStats(&after)
				grew := after.TotalAlloc - before.TotalAlloc
				if grew > 8<<20 {
					t.Fatalf("the failure allocated %d bytes", grew)
				}
				t.Logf("allocated %d KiB from the call to the failure", grew>>10)
				// Which check refuses the reply first depends on how the
				// kernel splits the stream into reads: the bound scanner
				// sees bytes as go-redis reads them, and go-redis may
				// refuse a reply's shape itself, before it allocates,
				// from the first few bytes. Either refusal is correct;
				// the allocation check above is what must hold.
				if w := warn.String(); !(strings.Contains(w, "reply out of bounds: ") && strings.Contains(w, hr.want)) && !goRedisRefused(w) {
					t.Fatalf("warning %q does not name the bound (%q)", w, hr.want)
				}
				if st := r.Stats(); st.Hits != 0 || st.Rejected != 0 {
					t.Fatalf("stats %+v", st)
				}
				// The cache works locally meanwhile, and the tier again
				// once the server answers honestly (the fake does after one
				// hostile reply).
				if err := c.Insert(key(4), value(4)); err != nil {
					t.Fatal(err)
				}
				if v, ok := find(t, c, key(4)); !ok || !bytes.Equal(v, value(4)) {
					t.Fatalf("local find after the failure: %q %v", v, ok)
				}
				if !waitFor(10*time.Second, func() bool { return !r.Down() }) {
					t.Fatal("the tier did not come back")
				}
				r.Put("test-scope", key(5), value(5))
				r.Flush()
				if v, ok := r.Get("test-scope", key(5)); !ok || !bytes.Equal(v, value(5)) {
					t.Fatalf("remote get after recovery: %q %v %+v %s", v, ok, r.Stats(), warn)
				}
			})
		}
	}
}
