package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/convcache/convcache/internal/hostile"
)

func main() {
	scope := flag.String("scope", "hostile", "the scope of the reader's entries")
	scale := flag.Float64("scale", 1, "multiply each class's default size")
	only := flag.String("only", "", "comma-separated classes to write (default: all)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gen [-scope NAME] [-scale F] [-only CLASS,...] DIR")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	for _, c := range hostile.Classes() {
		if len(want) > 0 && !want[c.Name] {
			continue
		}
		data := c.Build(int(float64(c.Size)**scale), *scope)
		path := filepath.Join(dir, c.Name+".ccdb")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		fmt.Printf("%-16s %9d bytes  %s\n", c.Name, len(data), c.Doc)
	}
}
