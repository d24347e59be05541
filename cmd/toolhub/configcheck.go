package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/toolhub/toolhub/internal/config"
)

// errConfigInvalid: `toolhub config check` found problems (exit 1; they
// are printed already).
var errConfigInvalid = errors.New("the config has problems")

// configCmd is `toolhub config check [--config F]`, like `nginx -t`: it
// prints every problem as file:line: message and exits 1 when there is one.
func configCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		if len(args) > 0 && args[0] != "-h" && args[0] != "--help" && args[0] != "-help" {
			fmt.Fprintf(stderr, "toolhub config: unknown subcommand %q\n\n", args[0])
		}
		fmt.Fprintln(stderr, "Usage: toolhub config check [--config toolhub.yaml]")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			return flag.ErrHelp
		}
		return errUsage
	}
	fs := flags("config check", "[--config F]", "Check a config file without starting anything: YAML syntax, unknown keys, value types,\ndurations, amounts, and every rule `toolhub serve` applies. Each problem is printed as\nfile:line: message; the exit status is 1 when there is any.", stderr)
	path := fs.String("config", os.Getenv("TOOLHUB_CONFIG"), "config file; empty: the embedded default (env TOOLHUB_CONFIG)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toolhub config check: unexpected argument %q (the file goes after --config)\n", fs.Arg(0))
		return errUsage
	}
	problems := config.CheckFile(*path)
	name := *path
	if name == "" {
		name = "embedded default config"
	}
	if len(problems) == 0 {
		fmt.Fprintf(stdout, "%s: ok\n", name)
		return nil
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, p)
	}
	fmt.Fprintf(stderr, "%s: %d problem(s)\n", name, len(problems))
	return errConfigInvalid
}
