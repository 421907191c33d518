package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// The parts of an installation convcache config can print, in the order
// it prints them.
var configItems = []struct {
	flag, help string
	value      func(in installation) (string, error)
}{
	{"prefix", "the install prefix (the wheel's package directory)", func(in installation) (string, error) {
		return in.prefix, nil
	}},
	{"cflags", "the compiler flags: the include directory", func(in installation) (string, error) {
		return "-I" + in.incDir, nil
	}},
	{"libs", "the linker flags: the library, and a run path to its directory", func(in installation) (string, error) {
		return fmt.Sprintf("-L%s -lconvcache -Wl,-rpath,%s", in.libDir, in.libDir), nil
	}},
	{"cmakedir", "the CMake package directory, for -Dconvcache_DIR=DIR", func(in installation) (string, error) {
		return packageDir(in, filepath.Join("cmake", "convcache"), "convcacheConfig.cmake")
	}},
	{"pkgconfigdir", "the directory of convcache.pc, for PKG_CONFIG_PATH", func(in installation) (string, error) {
		return packageDir(in, "pkgconfig", "convcache.pc")
	}},
}

// packageDir is LIBDIR/sub when it holds file: a build tree has neither
// package file; only an installation does.
func packageDir(in installation, sub, file string) (string, error) {
	dir := filepath.Join(in.libDir, sub)
	if !isFile(filepath.Join(dir, file)) {
		return "", withCode(exitIO, "%s has no %s (a build tree has none): use an installation, from make install PREFIX=DIR or pip install of the wheel",
			in.libDir, filepath.Join(sub, file))
	}
	return dir, nil
}

func newConfigCmd(e *env) *cobra.Command {
	want := make([]bool, len(configItems))
	c := &cobra.Command{
		Use:   "config [--prefix] [--cflags] [--libs] [--cmakedir] [--pkgconfigdir]",
		Short: "print how to build C and C++ programs against this installation",
		Long: `Prints where this command's installation keeps the library, the headers and
the package files, as pkg-config and pybind11 --cmakedir do: the one beside
this command (PREFIX/bin/convcache with PREFIX/lib and PREFIX/include, which
is also the layout of the wheel's Python package). Each flag asked for
prints its value, in the order listed, on one line separated by spaces;
with no flag, every value is printed, one per line, with its name.

Examples:
  cc prog.c $(convcache config --cflags --libs)
  cmake -S . -B build -Dconvcache_DIR="$(convcache config --cmakedir)"
  PKG_CONFIG_PATH=$(convcache config --pkgconfigdir) pkg-config --libs convcache

--libs names the library and adds a run path to its directory, which the
dynamic loader does not search otherwise.
The flags are printed unquoted: a directory with spaces needs quoting that
command substitution does not do. Exit status 3 when a part asked for is
not there (a build tree has no CMake package or pkg-config file).`,
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			in, err := findInstallation()
			if err != nil {
				return withCode(exitIO, "%v", err)
			}
			return printConfig(e, in, want)
		},
	}
	for i, it := range configItems {
		c.Flags().BoolVar(&want[i], it.flag, false, it.help)
	}
	return c
}

// printConfig prints the values asked for, or all of them with their names.
func printConfig(e *env, in installation, want []bool) error {
	all := true
	for _, w := range want {
		all = all && !w
	}
	var line []string
	for i, it := range configItems {
		if !all && !want[i] {
			continue
		}
		v, err := it.value(in)
		if err != nil {
			if all {
				v = "(none: " + message(err) + ")"
			} else {
				return err
			}
		}
		if all {
			fmt.Fprintf(e.stdout, "%-13s %s\n", it.flag, v)
		} else {
			line = append(line, v)
		}
	}
	if !all {
		_, err := fmt.Fprintln(e.stdout, strings.Join(line, " "))
		return err
	}
	return nil
}
