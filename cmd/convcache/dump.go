package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/convcache/convcache/cache"
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
fields (params, find_key, perfs).`,
		Args: atMostOnePath,
		RunE: func(c *cobra.Command, args []string) error { return list(e, "dump", args, o, true) },
	}
	o.addFlags(c.Flags())
	return c
}

func printEntry(w *bufio.Writer, now time.Time, en cache.Entry, d *decoded) {
	layout := d.Layout
	if layout == "" {
		layout = "unknown (hex)"
	}
	fmt.Fprintf(w, "\n  layout    %s\n", layout)
	fmt.Fprintf(w, "  key       %s\n", d.Key)
	if len(d.Perfs) > 1 {
		fmt.Fprintf(w, "  value     %d results\n", len(d.Perfs))
		for _, p := range d.Perfs {
			fmt.Fprintf(w, "              %s\n", p.Format(d.Op))
		}
	} else {
		fmt.Fprintf(w, "  value     %s\n", d.Value)
	}
	fmt.Fprintf(w, "  inserted  %s\n", timeText(now, en.Inserted))
	fmt.Fprintf(w, "  used      %s\n", timeText(now, en.Used))
	fmt.Fprintf(w, "  key hex (%d B)\n%s", len(en.Key), indent(hex.Dump(en.Key), "    "))
	fmt.Fprintf(w, "  value hex (%d B)\n%s", len(en.Value), indent(hex.Dump(en.Value), "    "))
}

func indent(s, pre string) string {
	if s == "" {
		return ""
	}
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(pre + l)
		}
	}
	return b.String()
}
