package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/convcache/convcache/cudnn"
	"github.com/convcache/convcache/internal/cachefile"
)

// entryJSON is one entry as ls and dump print it with --json.
type entryJSON struct {
	Scope      string    `json:"scope"`
	ScopeHash  string    `json:"scope_hash"`
	Layout     string    `json:"layout,omitempty"`
	Name       string    `json:"name,omitempty"`
	Op         string    `json:"op,omitempty"`
	Key        string    `json:"key"`
	Value      string    `json:"value"`
	TimeMs     *float64  `json:"time_ms,omitempty"`
	KeyBytes   int       `json:"key_bytes"`
	ValueBytes int       `json:"value_bytes"`
	Inserted   time.Time `json:"inserted"`
	Used       time.Time `json:"used"`

	// dump only
	KeyHex   string             `json:"key_hex,omitempty"`
	ValueHex string             `json:"value_hex,omitempty"`
	Params   *cudnn.Params      `json:"params,omitempty"`
	FindKey  *cudnn.FindKey     `json:"find_key,omitempty"`
	Perfs    []cudnn.Perf       `json:"perfs,omitempty"`
	Demo     *demoChoice        `json:"demo_choice,omitempty"`
	Choices  []engineChoiceJSON `json:"engine_choices,omitempty"`
}

// engineChoiceJSON is a backend-API engine choice in dump --json.
type engineChoiceJSON struct {
	Tag       string `json:"tag"`
	Engine    int64  `json:"engine"`
	Workspace int64  `json:"workspace"`
}

// lsHexMax is how much of an undecoded key or value ls shows.
const lsHexMax = 32

// listOptions are the flags of ls and dump.
type listOptions struct {
	json   bool
	scopes []string
}

// decodingHelp says what ls and dump decode; both print it.
const decodingHelp = `Keys of the layouts convcache knows are decoded through package cudnn:
PyTorch's ConvolutionParams (104 bytes); the same behind a BenchmarkCache
name, as convcache.hpp stores it; and the LD_PRELOAD interposer's find keys
(they start with "ccf1"). A value is decoded as cuDNN perf structs only when
its key says it holds them: an interposer key, or a BenchmarkCache name with
a "cudnn" part that ends in the direction (torch.cudnn.v7.fwd,
demo.cudnn.bwd_data, x.cudnn.bwd_filter). The demo's own values (name
demo.conv2d.fwd) are decoded as the demo's choice: the implementation its
CPU autotuner chose, its time, and the other candidates' times. Any other
value is shown as hex and its size. Scope names and other text from the file are printed with
control characters escaped (\x1b, \r, \u202e, ...).`

func newLsCmd(e *env) *cobra.Command {
	var o listOptions
	c := &cobra.Command{
		Use:   "ls [PATH] [--scope S]... [--json]",
		Short: "list entries, decoded where the layout is known",
		Long: `Lists entries, one line each, grouped by scope, for example

  torch.cudnn.v7.fwd float NCHW 32x64x56x56 * 64x64x3x3 pad 1 stride 1 -> IMPLICIT_PRECOMP_GEMM 0.12 ms ws 0 B

` + decodingHelp + `
ls shortens hex to 32 bytes.

With --json it prints an array of objects: scope, scope_hash, layout, name,
op, key, value, time_ms, key_bytes, value_bytes, inserted, used.`,
		Args: atMostOnePath,
		RunE: func(c *cobra.Command, args []string) error { return list(e, "ls", args, o, false) },
	}
	o.addFlags(c.Flags())
	return c
}

func (o *listOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print a JSON array")
	fs.StringArrayVar(&o.scopes, "scope", nil, "only scope `S`: a name, current, or #HASH (repeatable)")
}

func list(e *env, name string, args []string, o listOptions, full bool) error {
	path, err := cachePath(args)
	if err != nil {
		return err
	}
	filter, err := newScopeFilter(o.scopes)
	if err != nil {
		return err
	}
	var entries []cachefile.Entry
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(e.stderr, "convcache %s: %s %s\n", name, path, notCreatedYet)
	} else {
		f, err := e.readCache(path, "reading "+path)
		if err != nil {
			return err
		}
		for _, d := range f.Corrupt() {
			fmt.Fprintf(e.stderr, "convcache %s: warning: %s: corrupt record at offset %d (%d bytes) skipped; run convcache verify\n", name, path, d.Offset, d.Length)
		}
		for _, en := range f.Entries() {
			if filter.match(en.ScopeHash) {
				entries = append(entries, en)
			}
		}
	}
	hexMax := lsHexMax
	if full {
		hexMax = 0
	}
	if o.json {
		out := make([]entryJSON, 0, len(entries))
		for _, en := range entries {
			out = append(out, toJSON(en, hexMax, full))
		}
		return writeJSON(e.stdout, out)
	}
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	now := time.Now()
	for i, en := range entries {
		if i == 0 || en.ScopeHash != entries[i-1].ScopeHash {
			n := 0
			for _, x := range entries[i:] {
				if x.ScopeHash != en.ScopeHash {
					break
				}
				n++
			}
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "scope %s (%s)\n", scopeLabel(en.Scope, en.ScopeHash), plural(n, "entry", "entries"))
		}
		d := describe(en.Key, en.Value, hexMax)
		if !full {
			fmt.Fprintf(w, "  %s\n", d.line())
			continue
		}
		printEntry(w, now, en, &d)
	}
	return nil
}

func toJSON(en cachefile.Entry, hexMax int, full bool) entryJSON {
	d := describe(en.Key, en.Value, hexMax)
	j := entryJSON{
		Scope: en.Scope, ScopeHash: hashText(en.ScopeHash), Layout: d.Layout, Name: d.Name,
		Key: d.Key, Value: d.Value, KeyBytes: len(en.Key), ValueBytes: len(en.Value),
		Inserted: en.Inserted, Used: en.Used,
	}
	if d.Op != 0 {
		j.Op = d.Op.String()
	}
	if t, ok := d.measuredTime(); ok {
		j.TimeMs = &t
	}
	if full {
		j.KeyHex, j.ValueHex = hex.EncodeToString(en.Key), hex.EncodeToString(en.Value)
		j.Params, j.FindKey, j.Perfs, j.Demo = d.Params, d.FindKey, d.Perfs, d.Demo
		for _, c := range d.Choices {
			j.Choices = append(j.Choices, engineChoiceJSON{Tag: c.Tag(), Engine: c.Engine, Workspace: c.Workspace})
		}
	}
	return j
}
