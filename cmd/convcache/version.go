package main

//go:generate go run mkversion.go

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/convcache/convcache/cache"
)

// versionLine is what convcache --version and convcache version print: the
// library version this command was built with (the header's, through
// version_header.go), the newest file format it reads, and the Go
// toolchain and platform.
func versionLine() string {
	return fmt.Sprintf("convcache %s (file format %d, %s, %s/%s)",
		libraryVersion, cache.FormatVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

type versionJSON struct {
	Version    string `json:"version"`
	FileFormat int    `json:"file_format"`
	Go         string `json:"go"`
	Platform   string `json:"platform"`
}

func newVersionCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version [--json]",
		Short: "print the version, the file format it reads, and the Go version",
		Long: "The version is the library's (CONVCACHE_VERSION_STRING in convcache.h): the command\n" +
			"and libconvcache.so of one release read and write the same files.",
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if asJSON {
				return writeJSON(e.stdout, versionJSON{libraryVersion, cache.FormatVersion,
					runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH})
			}
			_, err := fmt.Fprintln(e.stdout, versionLine())
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
