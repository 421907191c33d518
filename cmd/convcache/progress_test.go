package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns a pseudo-terminal pair: what the program writes to the
// second file is read from the first.
func openPTY(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open pts: %v", err)
	}
	return m, s
}

// onTerminal runs the binary with standard error on a terminal and returns
// what it drew there.
func onTerminal(t *testing.T, args ...string) (stdout, tty string) {
	t.Helper()
	m, s := openPTY(t)
	defer m.Close()
	cmd := exec.Command(binary, args...)
	cmd.Env = cleanEnv(t)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, s
	if err := cmd.Start(); err != nil {
		s.Close()
		t.Fatal(err)
	}
	s.Close()
	var drawn bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&drawn, m); close(done) }() // ends with EIO once the child exits
	if err := cmd.Wait(); err != nil {
		t.Fatalf("convcache %v: %v\n%s", args, err, drawn.String())
	}
	<-done
	return out.String(), drawn.String()
}

func TestProgressOnTerminal(t *testing.T) {
	path := sampleCache(t)
	out, tty := onTerminal(t, "verify", path)
	if !strings.Contains(out, ": ok: ") {
		t.Fatalf("stdout %q", out)
	}
	if !strings.Contains(tty, "\r\033[Kverifying [##############################] 100% ") || !strings.HasSuffix(tty, "\r\033[K") {
		t.Fatalf("terminal got %q", tty)
	}
	dir := t.TempDir()
	_, tty = onTerminal(t, "merge", path, path, "-o", filepath.Join(dir, "m.ccdb"))
	if !strings.Contains(tty, "reading "+path+" [") {
		t.Fatalf("merge drew %q", tty)
	}
	_, tty = onTerminal(t, "import", "--cache", filepath.Join(dir, "live.ccdb"), path)
	if !strings.Contains(tty, "importing [##############################] 100% 4/4") {
		t.Fatalf("import drew %q", tty)
	}
	// Not a terminal: nothing (the other tests check standard error is
	// empty, and here a pipe).
	r := mustRun(t, exitOK, nil, "verify", path)
	if r.stderr != "" {
		t.Fatalf("stderr %q", r.stderr)
	}
}
