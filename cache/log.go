package cache

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
)

// The verbose log: one line per cache event, in a fixed, comma-separated
// format modelled on oneDNN's verbose mode:
//
//	convcache,<event>,<scope>,<key>,<microseconds>[,<detail>]
//
// event is one of (level 1) hit, persistent_hit, system_hit, remote_hit,
// miss, insert, pending, build, error, or (level 2) lock_wait, compact,
// evict. scope is the first 8 hex digits of the scope's XXH64 (convcache ls
// shows names); key is <length>:<16 hex digits of the key's XXH64>, or "-";
// microseconds is how long the operation took, with one decimal. detail is
// free text without commas, for level 2 events and errors.
//
// With the log off (the default), an event costs one integer comparison.

// Log levels.
const (
	LogOff    = 0
	LogEvents = 1 // hits, misses, inserts, builds
	LogAll    = 2 // and lock waits, compactions, evictions
)

// eventLog writes verbose lines. One line is one Write call, so lines from
// threads and processes sharing a file with O_APPEND do not interleave.
type eventLog struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (c *Cache) logEvent(event string, key []byte, d time.Duration, detail string) {
	l := c.log
	l.mu.Lock()
	defer l.mu.Unlock()
	b := append(l.buf[:0], "convcache,"...)
	b = append(b, event...)
	b = fmt.Appendf(b, ",%08x,", uint32(c.scopeHash>>32))
	if key != nil {
		b = fmt.Appendf(b, "%d:%016x", len(key), xxhash.Sum64(key))
	} else {
		b = append(b, '-')
	}
	b = fmt.Appendf(b, ",%.1f", float64(d.Nanoseconds())/1e3)
	if detail != "" {
		b = append(b, ',')
		b = append(b, detail...)
	}
	b = append(b, '\n')
	l.w.Write(b)
	l.buf = b
}

// logDetail makes an error fit the log's last field: one line, no commas.
func logDetail(err error) string {
	return strings.NewReplacer(",", ";", "\n", " ").Replace(err.Error())
}
