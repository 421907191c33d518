package redistest

import (
	"errors"
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
	"syscall"
	"time"
)

// Binary returns the redis-server binary, or an error that says how to
// install it.
func Binary() (string, error) {
	if bin, err := exec.LookPath("redis-server"); err == nil {
		return bin, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", errors.New("redis-server not found (apt-get install redis-server)")
}

// FreePort returns a loopback TCP port nothing listens on at the moment.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Server is a redis-server on a loopback port, its data and logs in Dir,
// without persistence. Set Bin and Dir (and optionally Args, TLSCert and
// TLSKey), then Start.
type Server struct {
	Bin, Dir        string
	Args            []string // extra arguments, such as --requirepass
	TLSCert, TLSKey string   // serve TLS only, with this certificate
	Port            int

	cmd  *exec.Cmd
	done chan struct{}
	runs int // launches so far: each writes its own log
}

// Start launches the server on a free port, trying a few ports.
func (s *Server) Start() error {
	var err error
	for try := 0; try < 5; try++ {
		if s.Port, err = FreePort(); err != nil {
			return err
		}
		if err = s.launch(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("redis-server did not start: %v\n%s", err, s.Log())
}

// Restart starts the server again on the same port, after Stop (its data is
// gone). The port may linger for a moment, so it retries for a few seconds.
func (s *Server) Restart() error {
	var err error
	for try := 0; try < 50; try++ {
		if err = s.launch(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("redis-server did not restart: %v", err)
}

func (s *Server) launch() error {
	args := append([]string{
		"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--dir", s.Dir, "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--logfile", s.logPath(s.runs + 1),
	}, s.Args...)
	if s.TLSCert != "" {
		args[1] = "0" // no plain port
		args = append(args, "--tls-port", strconv.Itoa(s.Port), "--tls-cert-file", s.TLSCert,
			"--tls-key-file", s.TLSKey, "--tls-auth-clients", "no")
	}
	cmd := exec.Command(s.Bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test, however it ends
	cmd.Dir = s.Dir
	if err := cmd.Start(); err != nil {
		return err
	}
	s.runs++
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(time.Minute) // only a broken server needs this long
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("redis-server exited: %v", cmd.ProcessState)
		default:
		}
		if strings.Contains(s.Log(), "Ready to accept connections") {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return fmt.Errorf("redis-server did not answer on port %d", s.Port)
}

func (s *Server) logPath(run int) string {
	return filepath.Join(s.Dir, fmt.Sprintf("redis-%d.log", run))
}

// Log returns the current server's log.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath(s.runs))
	return string(b)
}

// Stop kills the server (SIGKILL: as abrupt as a crash) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Version returns the server's version, such as "7.0.15", or "?".
func (s *Server) Version() string {
	out, _ := exec.Command(s.Bin, "--version").Output()
	if _, v, ok := strings.Cut(string(out), "v="); ok {
		v, _, _ = strings.Cut(v, " ")
		return v
	}
	return "?"
}

// DelayProxy forwards loopback TCP connections to a server, delaying every
// reply by a delay that can change at any time: one added round trip per
// command or pipeline.
type DelayProxy struct {
	l      net.Listener
	target string
	delay  atomic.Int64 // nanoseconds
	mu     sync.Mutex
	conns  []net.Conn
}

// NewDelayProxy starts a proxy to target (host:port).
func NewDelayProxy(target string, delay time.Duration) (*DelayProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{l: l, target: target}
	p.delay.Store(int64(delay))
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *DelayProxy) Addr() string { return p.l.Addr().String() }

// URL is the proxy's redis:// URL, database 0.
func (p *DelayProxy) URL() string { return "redis://" + p.Addr() + "/0" }

// SetDelay changes the delay of replies from now on.
func (p *DelayProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

func (p *DelayProxy) serve() {
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
func (p *DelayProxy) replies(up, c net.Conn) {
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

// Close stops the proxy and its connections.
func (p *DelayProxy) Close() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}
