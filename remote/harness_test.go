package remote_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/remote"
	"github.com/convcache/convcache/remote/internal/redistest"
)

// redisServer is a real redis-server on a loopback port in a temporary
// directory, stopped when the test ends.
type redisServer struct {
	*redistest.Server
	t testing.TB
}

// redisBinary returns the redis-server binary, or skips the test.
func redisBinary(t testing.TB) string {
	bin, err := redistest.Binary()
	if err != nil {
		t.Skipf("%v: the remote tier is tested against a real server only", err)
	}
	return bin
}

// startRedis starts a server on a free loopback port.
func startRedis(t testing.TB, args ...string) *redisServer {
	t.Helper()
	return startServer(t, &redistest.Server{Bin: redisBinary(t), Dir: t.TempDir(), Args: args})
}

func startServer(t testing.TB, s *redistest.Server) *redisServer {
	t.Helper()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return &redisServer{s, t}
}

func freePort(t testing.TB) int {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func (s *redisServer) stop() { s.Stop() }

// restart starts the server again on the same port (its data is gone).
func (s *redisServer) restart() {
	s.t.Helper()
	if err := s.Restart(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *redisServer) addr() string { return s.Addr() }
func (s *redisServer) url() string  { return s.URL() }

// client is a plain go-redis client for the test's own checks.
func (s *redisServer) client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr(), Protocol: 2, DisableIdentity: true})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// calls returns the server's count of calls per command (INFO
// commandstats), such as calls()["get"].
func (s *redisServer) calls(c *redis.Client) map[string]int {
	s.t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		s.t.Fatalf("INFO commandstats: %v", err)
	}
	m := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		// cmdstat_get:calls=3,usec=...
		line := sc.Text()
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		m[name] = n
	}
	return m
}

type delayProxy struct{ *redistest.DelayProxy }

func startProxy(t testing.TB, target string, delay time.Duration) *delayProxy {
	p, err := redistest.NewDelayProxy(target, delay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &delayProxy{p}
}

func (p *delayProxy) url() string              { return p.URL() }
func (p *delayProxy) setDelay(d time.Duration) { p.SetDelay(d) }

// garbageServer accepts connections and answers anything with bytes that
// are not the Redis protocol.
func garbageServer(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n\x00\xff garbage"))
				}
			}()
		}
	}()
	return "redis://" + l.Addr().String() + "/0"
}

// closedPortURL is a loopback URL nothing listens on (connection refused).
func closedPortURL(t testing.TB) string {
	return "redis://127.0.0.1:" + strconv.Itoa(freePort(t)) + "/0"
}

// syncBuffer is a goroutine-safe warning sink.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *syncBuffer) lines() int { return strings.Count(b.String(), "\n") }

// waitFor polls cond every 10 ms for at most d.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

func newRemote(t testing.TB, url string, mod func(*remote.Options)) (*remote.Client, *syncBuffer) {
	t.Helper()
	w := &syncBuffer{}
	// A generous deadline unless the test is about the deadline: a loaded
	// machine must not make a functional test fail open.
	o := remote.Options{URL: url, Warn: w, Timeout: 2 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	r, err := remote.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, w
}

func openCache(t testing.TB, path string, r cache.Remote, mode cache.Mode) *cache.Cache {
	t.Helper()
	c, err := cache.Open(path, &cache.Options{Scope: "test-scope", Remote: r, Mode: mode, Warn: &syncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func key(i int) []byte { return []byte(fmt.Sprintf("conv shape %06d", i)) }

func value(i int) []byte { return []byte(fmt.Sprintf("algo %d ws %d", i%8, i*4096)) }

func find(t testing.TB, c *cache.Cache, k []byte) ([]byte, bool) {
	t.Helper()
	v, ok, err := c.Get(k)
	if err != nil {
		t.Fatalf("find %q: %v", k, err)
	}
	return v, ok
}

// clusterKey is the record MAC key the cluster tests share.
var clusterKey = []byte("the cluster's record key, 32 B.")

func withKey(o *remote.Options) { o.MACKey = clusterKey }

// slack is how much longer than the remote deadline a call may take in
// these tests: scheduling on a loaded machine, the race detector, a local
// file append. It stays well below the 3 s by which the slow servers here
// answer late, so a call that waited for one still fails the bound.
const slack = time.Second

// fsyncSlack replaces slack for a Save, which also fsyncs the local file: a
// loaded disk can take that long without any help from Redis. The servers
// these tests make slow are slower still (3 s).
const fsyncSlack = 2 * time.Second
