package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The command tree is built with spf13/cobra, which gives the conventions
// of git and kubectl: "help CMD" and "CMD --help" on standard output,
// --version, GNU flags (--json, -o) anywhere on the line, and shell
// completion scripts. What cobra would print in its own words (errors,
// help, usage) is printed here in the tool's words instead.

func init() {
	cobra.EnableCommandSorting = false // list commands in the order added
}

// newRoot returns the convcache command with every subcommand.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "convcache",
		Short:         "show, check and maintain convcache cache files, and run programs under the cuDNN interposer",
		SilenceErrors: true, // run prints errors, one line each
		SilenceUsage:  true,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(c, args[0])
			}
			return nil
		},
		// --version, else no command: the usage, on standard error, and
		// exit 2. (--version is handled here rather than by cobra's
		// Version field, whose template would link text/template, and with
		// it every method of every type: it doubled the binary.)
		RunE: func(c *cobra.Command, args []string) error {
			if v, _ := c.Flags().GetBool("version"); v {
				_, err := fmt.Fprintln(e.stdout, versionLine())
				return err
			}
			printRootHelp(e.stderr, c)
			return quietErr{exitUsage}
		},
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.Flags().Bool("version", false, "print the version")
	root.AddCommand(
		newStatsCmd(e), newLsCmd(e), newDumpCmd(e), newVerifyCmd(e), newCompactCmd(e),
		newPruneCmd(e), newMergeCmd(e), newExportCmd(e), newImportCmd(e), newScopeCmd(e),
		newRunCmd(e), newDoctorCmd(e), newConfigCmd(e), newVersionCmd(e), newCompletionCmd(e),
	)
	root.SetHelpCommand(newHelpCmd(e))
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { printHelp(c.OutOrStdout(), c) })
	root.SetUsageFunc(func(c *cobra.Command) error { printUsage(c.OutOrStderr(), c); return nil })
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &argError{c, flagError(c, err)} })
	addHelpFlags(root)
	return root
}

// addHelpFlags gives every command the same -h, --help (cobra's default
// says "help for NAME").
func addHelpFlags(c *cobra.Command) {
	c.Flags().BoolP("help", "h", false, "print this help")
	for _, sub := range c.Commands() {
		addHelpFlags(sub)
	}
}

func newHelpCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "print a command's help, or the list of commands",
		Long:  "help COMMAND prints what COMMAND does and its flags, as convcache COMMAND --help does.",
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return argErr(c, "no command %q; the commands are listed by convcache help", strings.Join(args, " "))
			}
			printHelp(e.stdout, target)
			return nil
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var out []cobra.Completion
			if len(args) == 0 {
				for _, sub := range c.Root().Commands() {
					if sub.IsAvailableCommand() {
						out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
					}
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	}
	c.Flags().BoolP("help", "h", false, "print this help")
	return c
}

// unknownCommand is the error for a command name that is not one, with the
// nearest names when there are any.
func unknownCommand(c *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if s := c.SuggestionsFor(name); len(s) > 0 {
		msg += " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return argErr(c, "%s", msg)
}

// flagError says what is wrong with a flag in the tool's words.
func flagError(c *cobra.Command, err error) error {
	var notExist *pflag.NotExistError
	var noValue *pflag.ValueRequiredError
	var badValue *pflag.InvalidValueError
	var badSyntax *pflag.InvalidSyntaxError
	switch {
	case errors.As(err, &notExist):
		if group := notExist.GetSpecifiedShortnames(); group != "" {
			if len(group) > 1 && c.Flags().Lookup(group) != nil {
				return fmt.Errorf("unknown flag -%s: a long flag takes two dashes, --%s", group, group)
			}
			return fmt.Errorf("unknown flag -%s", notExist.GetSpecifiedName())
		}
		return fmt.Errorf("unknown flag --%s", notExist.GetSpecifiedName())
	case errors.As(err, &noValue):
		return fmt.Errorf("--%s needs a value", noValue.GetFlag().Name)
	case errors.As(err, &badValue):
		cause := errors.Unwrap(badValue)
		var num *strconv.NumError
		if errors.As(cause, &num) {
			cause = errors.New("not a whole number")
		}
		return fmt.Errorf("--%s %q: %v", badValue.GetFlag().Name, badValue.GetValue(), cause)
	case errors.As(err, &badSyntax):
		return fmt.Errorf("bad flag %s", badSyntax.GetSpecifiedFlag())
	}
	return err
}

// Argument checks, in the tool's words.

// atMostOnePath accepts an optional cache file.
func atMostOnePath(c *cobra.Command, args []string) error {
	if len(args) > 1 {
		return argErr(c, "too many arguments %q: give at most one cache file", args)
	}
	return nil
}

func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return argErr(c, "unexpected argument %q", args[0])
	}
	return nil
}

// usageLine is "convcache ls [PATH] [--scope S]... [--json]".
func usageLine(c *cobra.Command) string {
	if !c.HasParent() {
		return "convcache COMMAND [ARGS]"
	}
	return c.Parent().CommandPath() + " " + c.Use
}

// printHelp writes a command's help: what it does, its usage, and its
// flags. It is what help CMD and CMD --help print, on standard output.
func printHelp(w io.Writer, c *cobra.Command) {
	if !c.HasParent() {
		printRootHelp(w, c)
		return
	}
	fmt.Fprintf(w, "%s: %s\n\nusage: %s\n", c.CommandPath(), c.Short, usageLine(c))
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.Long, "\n"))
	}
	if subs := available(c); len(subs) > 0 {
		fmt.Fprintf(w, "\ncommands:\n")
		listCommands(w, subs)
	}
	fmt.Fprintf(w, "\nflags:\n%s", c.Flags().FlagUsages())
}

// printUsage writes the short form that follows an error about a flag or
// an argument, on standard error.
func printUsage(w io.Writer, c *cobra.Command) {
	if !c.HasParent() {
		fmt.Fprintf(w, "usage: %s\n\ncommands:\n", usageLine(c))
		listCommands(w, available(c))
		fmt.Fprintf(w, "\nRun convcache help COMMAND for a command's flags.\n")
		return
	}
	fmt.Fprintf(w, "usage: %s\n\nflags:\n%s\nRun convcache help %s for more.\n",
		usageLine(c), c.Flags().FlagUsages(), strings.TrimPrefix(c.CommandPath(), "convcache "))
}

func printRootHelp(w io.Writer, c *cobra.Command) {
	fmt.Fprintf(w, "convcache: %s\n\nusage: %s\n\ncommands:\n", c.Short, usageLine(c))
	listCommands(w, available(c))
	fmt.Fprintf(w, "\nflags:\n%s", c.Flags().FlagUsages())
	fmt.Fprint(w, `
PATH defaults to the default cache file ($CONVCACHE_PATH, else
$XDG_CACHE_HOME/convcache/cache.ccdb, else ~/.cache/convcache/cache.ccdb);
a PATH given must exist, the default may not have been created yet.
Run convcache help COMMAND (or convcache COMMAND --help) for a command's flags.

exit codes: 0 ok, 1 damage found (doctor: a problem found), 2 usage,
            3 I/O or format error (a PATH that does not exist included),
            4 no device fingerprint, 5 cache lock busy;
            convcache run exits with its command's status
`)
}

func available(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() || sub.Name() == "help" {
			out = append(out, sub)
		}
	}
	return out
}

func listCommands(w io.Writer, cs []*cobra.Command) {
	for _, sub := range cs {
		fmt.Fprintf(w, "  %-11s %s\n", sub.Name(), sub.Short)
	}
}
