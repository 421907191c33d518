package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/convcache/convcache/internal/bytesize"
	"github.com/convcache/convcache/internal/cachefile"
	"github.com/spf13/cobra"
)

// dump is ls in full detail: times, every perf result, and hex dumps.
func newDumpCmd(e *env) *cobra.Command {
	var o listOptions
	c := &cobra.Command{
		Use:   "dump [PATH] [--scope S]... [--json]",
		Short: "list entries in full detail, with hex",
		Long: `Lists every entry as ls does, with its layout, every perf result, the insert
and last-use times, and a hex dump of the key and the value.

` + decodingHelp + `

With --json it prints ls's objects plus key_hex, value_hex and the decoded
fields (params, find_key, perfs, demo_choice, engine_choices).`,
		Args: atMostOnePath,
		RunE: func(c *cobra.Command, args []string) error { return list(e, "dump", args, o, true) },
	}
	o.addFlags(c.Flags())
	return c
}

func printEntry(w *bufio.Writer, now time.Time, en cachefile.Entry, d *decoded) {
	layout := d.Layout
	if layout == "" {
		layout = "unknown (hex)"
	}
	fmt.Fprintf(w, "\n  layout    %s\n", layout)
	fmt.Fprintf(w, "  key       %s\n", d.Key)
	switch {
	case len(d.Perfs) > 1:
		fmt.Fprintf(w, "  value     %d results\n", len(d.Perfs))
		for _, p := range d.Perfs {
			fmt.Fprintf(w, "              %s\n", p.Format(d.Op))
		}
	case len(d.Choices) > 1:
		fmt.Fprintf(w, "  value     %d engine choices, most preferred first\n", len(d.Choices))
		for _, c := range d.Choices {
			fmt.Fprintf(w, "              %s\n", c)
		}
	case d.Demo != nil:
		fmt.Fprintf(w, "  value     the demo's choice: %s, ws %s, tuning took %s ms; on the reduced problem:\n",
			d.Demo.Algo, bytesize.Format(d.Demo.Workspace), msText(d.Demo.TuningMs))
		for _, c := range d.Demo.candidates() {
			fmt.Fprintf(w, "              %s\n", c)
		}
	default:
		fmt.Fprintf(w, "  value     %s\n", d.Value)
	}
	fmt.Fprintf(w, "  inserted  %s\n", timeText(now, en.Inserted))
	fmt.Fprintf(w, "  used      %s\n", timeText(now, en.Used))
	fmt.Fprintf(w, "  key hex (%d B)\n", len(en.Key))
	hexDump(w, en.Key, "    ")
	fmt.Fprintf(w, "  value hex (%d B)\n", len(en.Value))
	hexDump(w, en.Value, "    ")
}

// hexDump writes hex.Dump(b) with each line indented by pre, streaming: a
// value may be a megabyte, and its dump in memory four times that.
func hexDump(w io.Writer, b []byte, pre string) {
	d := hex.Dumper(&indenter{w: w, pre: pre, bol: true})
	d.Write(b)
	d.Close()
}

// indenter writes pre before every line written through it.
type indenter struct {
	w   io.Writer
	pre string
	bol bool // at the beginning of a line
}

func (in *indenter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if in.bol {
			io.WriteString(in.w, in.pre)
			in.bol = false
		}
		line := p
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			line, in.bol = p[:i+1], true
		}
		if _, err := in.w.Write(line); err != nil {
			return n - len(p), err
		}
		p = p[len(line):]
	}
	return n, nil
}
