package remote

import (
	"context"
	"fmt"
	"net"
	"syscall"
)

// go-redis allocates what a reply announces (a bulk string's length, an
// array's count) before the bytes arrive, so one hostile reply header can
// make the Go runtime abort for lack of memory: a fatal error, not a panic.
// boundedConn sits under go-redis, on the connection its dialer returns,
// and follows the RESP2 stream as it passes: a reply that announces or
// carries more than replyLimits allow fails the connection before go-redis
// sees the header. Pinning the protocol to RESP2 (New does) leaves only five
// reply types; any other type byte fails the connection too.

// replyLimits bound one reply, counted from its first byte to its last.
type replyLimits struct {
	bytes    int64 // bytes in the reply, counting a bulk string's announced length
	elements int64 // array elements announced in the reply, at every level
	depth    int   // arrays nested in arrays
	line     int   // bytes in one line: a status, an error, an integer, a header
}

// Fixed limits. The tier's own replies are one bulk string (GETRANGE), a
// status (PING, SET, AUTH, SELECT), an integer (EVAL) or an error; the
// largest array is HELLO's, which lists the server's modules (go-redis sends
// HELLO 2 on each new connection).
const (
	maxReplyElements = 1024
	maxReplyDepth    = 8
	maxReplyLine     = 64 << 10
	replySlack       = 64 << 10 // bytes beside the largest record
)

// replyLimitsFor returns the limits for a tier whose largest record is
// maxRecord bytes: a GETRANGE of up to maxRecord+1 bytes, plus slack.
func replyLimitsFor(maxRecord int) replyLimits {
	return replyLimits{
		bytes:    int64(maxRecord) + 1 + replySlack,
		elements: maxReplyElements,
		depth:    maxReplyDepth,
		line:     maxReplyLine,
	}
}

type scanState uint8

const (
	atType scanState = iota // the next byte begins a value
	inLine                  // in a line, up to its CRLF
	inBulk                  // in a bulk string's payload and CRLF
)

// respScanner follows a RESP2 reply stream in pieces of any size, checking
// each reply against its limits. Once it fails it stays failed.
type respScanner struct {
	lim   replyLimits
	state scanState
	typ   byte // the type byte of the current line

	lineLen int   // bytes of the current line after its type byte
	num     int64 // a header's number, so far
	digits  int
	neg     bool
	cr      bool // the last byte was CR

	bulkLeft int64   // bytes left of the current bulk string, CRLF included
	open     []int64 // elements still to come at each open array level
	used     int64   // bytes of the current reply, announced or seen
	elements int64   // elements announced in the current reply

	err error
}

func newRESPScanner(lim replyLimits) *respScanner {
	return &respScanner{lim: lim, open: make([]int64, 0, lim.depth)}
}

func (s *respScanner) fail(format string, args ...any) error {
	s.err = &replyError{fmt.Sprintf(format, args...)}
	return s.err
}

// replyError is errReply with what was out of bounds. It has no Unwrap:
// go-redis unwraps a handshake's error once, which would drop the detail.
type replyError struct{ what string }

func (e *replyError) Error() string        { return errReply.Error() + ": " + e.what }
func (e *replyError) Is(target error) bool { return target == errReply }

// scan checks the next bytes of the stream.
func (s *respScanner) scan(b []byte) error {
	if s.err != nil {
		return s.err
	}
	for i := 0; i < len(b); {
		switch s.state {
		case inBulk:
			n := min(int64(len(b)-i), s.bulkLeft)
			s.bulkLeft -= n
			i += int(n)
			if s.bulkLeft == 0 {
				if b[i-1] != '\n' { // checked as far as it is cheap: the LF
					return s.fail("a bulk string does not end with CRLF")
				}
				s.valueDone()
			}
		case atType:
			if len(s.open) == 0 { // a new reply
				s.used, s.elements = 0, 0
			}
			c := b[i]
			i++
			switch c {
			case '+', '-', ':', '$', '*':
			default:
				return s.fail("type byte %q is not RESP2", c)
			}
			s.typ, s.state = c, inLine
			s.lineLen, s.num, s.digits, s.neg, s.cr = 0, 0, 0, false, false
			s.used++
		case inLine:
			c := b[i]
			i++
			s.lineLen++
			s.used++
			if s.lineLen > s.lim.line {
				return s.fail("a line longer than %d bytes", s.lim.line)
			}
			if s.used > s.lim.bytes {
				return s.fail("a reply longer than %d bytes", s.lim.bytes)
			}
			switch {
			case s.cr && c == '\n':
				if err := s.lineDone(); err != nil {
					return err
				}
			case s.cr || c == '\n':
				return s.fail("a line with a bare CR or LF")
			case c == '\r':
				s.cr = true
			case s.typ == '$' || s.typ == '*':
				if err := s.headerByte(c); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// headerByte takes one byte of a length or count: digits, or -1 (null).
func (s *respScanner) headerByte(c byte) error {
	switch {
	case c == '-' && s.lineLen == 1:
		s.neg = true
	case c >= '0' && c <= '9' && s.digits < 18: // 18 digits cannot overflow
		s.num = s.num*10 + int64(c-'0')
		s.digits++
	default:
		return s.fail("a bad length in a %q header", s.typ)
	}
	return nil
}

// lineDone acts on a complete line.
func (s *respScanner) lineDone() error {
	s.state = atType
	if s.typ != '$' && s.typ != '*' {
		s.valueDone()
		return nil
	}
	switch {
	case s.digits == 0 || (s.neg && s.num != 1):
		return s.fail("a bad length in a %q header", s.typ)
	case s.neg: // $-1 or *-1: null
		s.valueDone()
	case s.typ == '$':
		if s.num+2 > s.lim.bytes-s.used {
			return s.fail("a bulk string of %d bytes (a reply holds at most %d bytes)", s.num, s.lim.bytes)
		}
		s.used += s.num + 2
		s.bulkLeft, s.state = s.num+2, inBulk
	default: // '*'
		if s.num > s.lim.elements-s.elements {
			return s.fail("an array of %d elements (a reply holds at most %d)", s.num, s.lim.elements)
		}
		if len(s.open) >= s.lim.depth {
			return s.fail("arrays nested deeper than %d", s.lim.depth)
		}
		s.elements += s.num
		if s.num == 0 {
			s.valueDone()
		} else {
			s.open = append(s.open, s.num)
		}
	}
	return nil
}

// valueDone counts a complete value in the arrays that hold it.
func (s *respScanner) valueDone() {
	s.state = atType
	for len(s.open) > 0 {
		top := len(s.open) - 1
		if s.open[top]--; s.open[top] > 0 {
			return
		}
		s.open = s.open[:top]
	}
}

// boundedConn checks every byte read from the server with a respScanner.
// A reply out of bounds fails the read, and every later read, so go-redis
// drops the connection and the call fails.
type boundedConn struct {
	net.Conn
	s *respScanner
}

func (c *boundedConn) Read(b []byte) (int, error) {
	if c.s.err != nil {
		return 0, c.s.err
	}
	n, err := c.Conn.Read(b)
	if n > 0 {
		if serr := c.s.scan(b[:n]); serr != nil {
			return 0, serr // none of the bytes reach go-redis
		}
	}
	return n, err
}

// boundedSysConn also exposes the socket of a plain TCP connection, so that
// go-redis's pool can check an idle connection for a hang-up (it peeks with
// MSG_PEEK, so no byte bypasses the scanner).
type boundedSysConn struct {
	boundedConn
	sc syscall.Conn
}

func (c *boundedSysConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// boundedDialer wraps go-redis's dialer: every connection it returns is
// bounded by lim. It runs in go-redis's goroutines, so it turns a panic
// into an error.
func boundedDialer(dial func(context.Context, string, string) (net.Conn, error), lim replyLimits) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
		defer func() {
			if p := recover(); p != nil {
				if conn != nil {
					conn.Close()
				}
				conn, err = nil, fmt.Errorf("remote: internal error in the dialer: %v", p)
			}
		}()
		conn, err = dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		bc := boundedConn{Conn: conn, s: newRESPScanner(lim)}
		if sc, ok := conn.(syscall.Conn); ok {
			return &boundedSysConn{bc, sc}, nil
		}
		return &bc, nil
	}
}
