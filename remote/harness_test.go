package remote_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a real redis-server on a loopback port in a temporary
// directory, stopped when the test ends.
type redisServer struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string // extra arguments, such as --requirepass
	cmd  *exec.Cmd
	done chan struct{}
	runs int // launches so far: each writes its own log
	// TLS only, with this certificate and key, on port
	tlsCert, tlsKey string
}

// redisBinary returns the redis-server binary, or skips the test.
func redisBinary(t testing.TB) string {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/redis-server"); serr == nil {
			return "/usr/bin/redis-server"
		}
		t.Skip("redis-server not found (apt-get install redis-server): the remote tier is tested against a real server only")
	}
	return bin
}

// startRedis starts a server on a free loopback port.
func startRedis(t testing.TB, args ...string) *redisServer {
	t.Helper()
	return startServer(t, &redisServer{t: t, bin: redisBinary(t), dir: t.TempDir(), args: args})
}

func startServer(t testing.TB, s *redisServer) *redisServer {
	t.Helper()
	var err error
	for try := 0; try < 5; try++ {
		s.port = freePort(t)
		if err = s.launch(); err == nil {
			t.Cleanup(s.stop)
			return s
		}
	}
	t.Fatalf("redis-server did not start: %v\n%s", err, s.log())
	return nil
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *redisServer) launch() error {
	args := append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--logfile", s.logPath(s.runs + 1),
	}, s.args...)
	if s.tlsCert != "" {
		args[1] = "0" // no plain port
		args = append(args, "--tls-port", strconv.Itoa(s.port), "--tls-cert-file", s.tlsCert,
			"--tls-key-file", s.tlsKey, "--tls-auth-clients", "no")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		return err
	}
	s.runs++
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("redis-server exited: %v", cmd.ProcessState)
		default:
		}
		if s.ready() {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.stop()
	return fmt.Errorf("redis-server did not answer on port %d", s.port)
}

func (s *redisServer) logPath(run int) string {
	return filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", run))
}

// ready reports whether the current server's log says it accepts
// connections.
func (s *redisServer) ready() bool {
	b, _ := os.ReadFile(s.logPath(s.runs))
	return strings.Contains(string(b), "Ready to accept connections")
}

func (s *redisServer) log() string {
	b, _ := os.ReadFile(s.logPath(s.runs))
	return string(b)
}

// stop kills the server (SIGKILL: as abrupt as a crash) and waits for it.
func (s *redisServer) stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// restart starts the server again on the same port (its data is gone).
func (s *redisServer) restart() {
	s.t.Helper()
	var err error
	for try := 0; try < 50; try++ { // the port may linger for a moment
		if err = s.launch(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("redis-server did not restart: %v", err)
}

func (s *redisServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }
func (s *redisServer) url() string  { return "redis://" + s.addr() + "/0" }

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

// delayProxy forwards loopback TCP connections to a server, delaying every
// reply by a delay that the test can change at any time.
type delayProxy struct {
	l      net.Listener
	target string
	delay  atomic.Int64 // nanoseconds
	mu     sync.Mutex
	conns  []net.Conn
}

func startProxy(t testing.TB, target string, delay time.Duration) *delayProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{l: l, target: target}
	p.delay.Store(int64(delay))
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *delayProxy) url() string { return "redis://" + p.l.Addr().String() + "/0" }

func (p *delayProxy) setDelay(d time.Duration) { p.delay.Store(int64(d)) }

func (p *delayProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go p.replies(up, c)
	}
}

// replies copies the server's replies to the client, each chunk after the
// delay (measured from when the chunk arrived, so delays do not add up).
func (p *delayProxy) replies(up, c net.Conn) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	ch := make(chan chunk, 1024)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := up.Read(buf)
			if n > 0 {
				ch <- chunk{buf[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	for k := range ch {
		time.Sleep(time.Until(k.at.Add(time.Duration(p.delay.Load()))))
		if _, err := c.Write(k.b); err != nil {
			break
		}
	}
	c.Close()
}

func (p *delayProxy) close() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

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
