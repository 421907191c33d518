package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// Fake is a loopback server that speaks just enough RESP2 for the remote
// tier, keeping strings in memory, and that can be told to answer one
// command with any bytes at all: a hostile server. Honest, it refuses
// HELLO (as Redis 5 does) and answers AUTH, SELECT, PING, GETRANGE, SET
// (with NX and PX) and EVAL (0). The tier's own tests use a real
// redis-server; Fake is for replies no real server sends.
type Fake struct {
	l  net.Listener
	wg sync.WaitGroup

	mu      sync.Mutex
	store   map[string][]byte
	conns   map[net.Conn]bool
	command string // answered with reply, then unit repeated forever
	reply   []byte
	unit    []byte
	times   int // hostile answers left
	closed  bool
}

// NewFake starts an honest Fake on a free loopback port.
func NewFake() (*Fake, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Fake{l: l, store: map[string][]byte{}, conns: map[net.Conn]bool{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// URL is the server's redis:// URL, database 0.
func (f *Fake) URL() string { return "redis://" + f.l.Addr().String() + "/0" }

// Answer makes the server answer the next times calls of command (such as
// "GETRANGE") with reply and then, if unit is not empty, with unit again
// and again until the client hangs up. Later calls get honest replies.
func (f *Fake) Answer(command string, times int, reply, unit []byte) {
	f.mu.Lock()
	f.command, f.times, f.reply, f.unit = strings.ToUpper(command), times, reply, unit
	f.mu.Unlock()
}

// Close stops the server, closes its connections and waits for them.
func (f *Fake) Close() {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.l.Close()
	f.wg.Wait()
}

func (f *Fake) serve() {
	defer f.wg.Done()
	for {
		c, err := f.l.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			c.Close()
			return
		}
		f.conns[c] = true
		f.wg.Add(1)
		f.mu.Unlock()
		go f.handle(c)
	}
}

func (f *Fake) handle(c net.Conn) {
	defer f.wg.Done()
	defer func() {
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
		c.Close()
	}()
	rd := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	for {
		args, err := readCommand(rd)
		if err != nil {
			return
		}
		f.mu.Lock()
		hostile := f.times > 0 && strings.EqualFold(args[0], f.command)
		if hostile {
			f.times--
		}
		reply, unit := f.reply, f.unit
		f.mu.Unlock()
		if !hostile {
			w.Write(f.honest(args))
			if rd.Buffered() == 0 { // answer a pipeline in one write
				if w.Flush() != nil {
					return
				}
			}
			continue
		}
		w.Write(reply)
		if w.Flush() != nil {
			return
		}
		for len(unit) > 0 {
			if _, err := c.Write(unit); err != nil {
				return
			}
		}
	}
}

// honest answers one command as Redis would, for the commands the tier
// sends.
func (f *Fake) honest(args []string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch cmd := strings.ToUpper(args[0]); {
	case cmd == "PING":
		return []byte("+PONG\r\n")
	case (cmd == "AUTH" || cmd == "SELECT") && len(args) > 1:
		return []byte("+OK\r\n")
	case cmd == "GETRANGE" && len(args) == 4:
		v := f.store[args[1]]
		start, err1 := strconv.Atoi(args[2])
		end, err2 := strconv.Atoi(args[3])
		if err1 != nil || err2 != nil || start < 0 || end < 0 {
			return []byte("-ERR this fake takes non-negative ranges only\r\n")
		}
		v = v[min(start, len(v)):min(end+1, len(v))]
		return append(append([]byte("$"+strconv.Itoa(len(v))+"\r\n"), v...), "\r\n"...)
	case cmd == "SET" && len(args) >= 3:
		if _, ok := f.store[args[1]]; ok && hasArg(args[3:], "NX") {
			return []byte("$-1\r\n")
		}
		f.store[args[1]] = []byte(args[2])
		return []byte("+OK\r\n")
	case cmd == "EVAL":
		return []byte(":0\r\n")
	}
	return []byte("-ERR unknown command '" + args[0] + "'\r\n")
}

func hasArg(args []string, want string) bool {
	for _, a := range args {
		if strings.EqualFold(a, want) {
			return true
		}
	}
	return false
}

// readCommand reads one command: an array of bulk strings, as clients send
// them. The client is the tier under test, so sizes are trusted up to a
// bound that only keeps a broken client from exhausting the test.
func readCommand(rd *bufio.Reader) ([]string, error) {
	n, err := readHeader(rd, '*')
	if err != nil || n < 1 || n > 1<<16 {
		return nil, errors.Join(err, errors.New("not a command"))
	}
	args := make([]string, n)
	for i := range args {
		size, err := readHeader(rd, '$')
		if err != nil || size < 0 || size > 64<<20 {
			return nil, errors.Join(err, errors.New("not a bulk string"))
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

func readHeader(rd *bufio.Reader, typ byte) (int, error) {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	line = bytes.TrimSuffix(line, []byte("\r\n"))
	if len(line) < 2 || line[0] != typ {
		return 0, errors.New("unexpected header")
	}
	return strconv.Atoi(string(line[1:]))
}
