package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
)

// progress draws a bar on standard error while a long operation runs, when
// standard error is a terminal; otherwise it writes nothing.
type progress struct {
	w     io.Writer // nil when quiet
	label string
	total int64
	done  int64
	last  time.Time
	drawn bool
	count bool // units are items, not bytes
}

// redrawEvery limits how often the bar is redrawn.
const redrawEvery = 100 * time.Millisecond

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func (e *env) progress(label string, total int64) *progress {
	p := &progress{label: label, total: total}
	if isTerminal(e.stderr) {
		p.w = e.stderr
	}
	return p
}

// add counts n more units done.
func (p *progress) add(n int64) {
	if p == nil || p.w == nil {
		return
	}
	p.done += n
	if now := time.Now(); !p.drawn || now.Sub(p.last) >= redrawEvery || p.done >= p.total {
		p.last = now
		p.draw()
	}
}

func (p *progress) draw() {
	const width = 30
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(p.done)/float64(p.total), 1)
	}
	n := int(frac * width)
	unit := bytesText
	if p.count {
		unit = func(n int64) string { return strconv.FormatInt(n, 10) }
	}
	fmt.Fprintf(p.w, "\r\033[K%s [%s%s] %3.0f%% %s/%s", p.label,
		strings.Repeat("#", n), strings.Repeat(".", width-n), frac*100,
		unit(p.done), unit(p.total))
	p.drawn = true
}

// finish erases the bar.
func (p *progress) finish() {
	if p == nil || p.w == nil || !p.drawn {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
	p.drawn = false
}

// readCache reads and parses a whole cache file, showing a progress bar
// while it reads. It returns errors that name the file and what to do.
func (e *env) readCache(path, label string) (*cachefile.File, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, missingFile(path)
		}
		return nil, fmt.Errorf("%w: open %s: %v; check its permissions", cache.ErrIO, path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: stat %s: %v", cache.ErrIO, path, err)
	}
	if fi.IsDir() {
		return nil, usageErr("%s is a directory: name a cache file", path)
	}
	bar := e.progress(label, fi.Size())
	defer bar.finish()
	data := make([]byte, 0, fi.Size())
	buf := make([]byte, 1<<20)
	for {
		n, err := f.Read(buf)
		data = append(data, buf[:n]...)
		bar.add(int64(n))
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %v; check the disk", cache.ErrIO, path, err)
		}
	}
	return cachefile.DecodeFile(path, data)
}
