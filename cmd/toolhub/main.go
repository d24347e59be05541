// Command toolhub is the governed hub for third-party AI tools.
//
//	toolhub serve [--config toolhub.yaml] [--addr 127.0.0.1:8080] [--data ./data] [--stdio]
//	toolhub tools [--format openai]
//	toolhub call NAME [JSON]
//	toolhub vendors [add|update|remove|versions|rollback|pending|approve|reject]
//	toolhub keys [create|list|rotate|revoke]
//	toolhub plan "GOAL"
//	toolhub report [usage|invoice|payout|reconcile|export]
//	toolhub bench [--concurrency N] [--split [--pin]] [--hop] [--failover RATE] [--limiter]
//	toolhub config check [--config F]
//	toolhub version
//
// main wires; the decisions live in the packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// revision is the commit, set at build time with -ldflags
// "-X main.revision=…" by builds Go's own VCS stamping misses (make build
// in a git worktree, whose .git is a file Go does not recognise). The
// build info's vcs.revision wins when there is one.
var revision = ""

type command struct {
	name, args, summary string
	run                 func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands []command

func init() {
	commands = []command{
		{"serve", "[flags]", "run the hub (embedded defaults and the example vendors without --config)", serve},
		{"tools", "[flags]", "list the catalog of a running hub", tools},
		{"call", "NAME [JSON] [flags]", "call a tool or capability through a running hub", call},
		{"vendors", "[list|add|update|remove|versions|rollback|pending|approve|reject]", "list vendors with their status, or register and change one", vendorsCmd},
		{"keys", "[create|list|rotate|revoke]", "manage API keys in the data folder", keys},
		{"plan", `"GOAL" [flags]`, "reach a goal through a running hub's planner, step by step", plan},
		{"report", "[usage|invoice|payout|reconcile|export] [flags]", "usage, invoices, payouts, reconciliation, CloudEvents export from the ledger", report},
		{"drill", "[flags]", "run fault drills (vendor faults, Redis down, PostgreSQL down, an instance killed) and print what happened", drillCmd},
		{"bench", "[flags]", "measure HTTP throughput and latency, direct vs through toolhub", bench},
		{"config", "check [--config F]", "check a config file like nginx -t: every error with file:line; exit 1 on any", configCmd},
		{"version", "", "print the module version and the VCS revision it was built from", printVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			// Asked for, help is the answer: it goes to stdout.
			usageOut := stderr
			if askedForHelp(args[1:]) {
				usageOut = stdout
			}
			err := c.run(ctx, args[1:], stdout, usageOut)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
			case errors.Is(err, errConfigInvalid):
				return 1 // the problems are printed already
			}
			fmt.Fprintln(stderr, "toolhub "+c.name+":", err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "toolhub: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

var errUsage = errors.New("usage")

// askedForHelp reports whether a command's arguments ask for its help
// (-h, -help or --help before a "--").
func askedForHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "toolhub — a governed hub for third-party AI tools\n\nUsage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  toolhub %-8s %-52s %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'toolhub COMMAND --help' for a command's flags.")
}

// flags returns a FlagSet that prints a usage line for cmd.
func flags(name, args, summary string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: toolhub %s %s\n\n%s\n\nFlags:\n", name, args, summary)
		fs.PrintDefaults()
	}
	return fs
}

// parseMixed parses args with fs, flags before, between and after the
// positional arguments, and returns the positional ones.
func parseMixed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return pos, nil
}
