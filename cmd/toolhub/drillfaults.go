package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
)

// drillFaultsCmd is `toolhub drill faults`: two instances under steady
// load through Redis hung, an instance killed, PostgreSQL stopped and an
// instance restarted while Redis is gone.
func drillFaultsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("drill faults", "[flags]", `Run two toolhub serve processes (this binary) on one Redis and one PostgreSQL
that the drill starts itself (redis-server, initdb and postgres from PATH or
/usr/lib/postgresql/*/bin, in a temporary folder on free ports: no store anyone
else uses is touched), send --rate calls/s of weather over both (a client that
moves a call an instance does not answer to the other), and go through:

  redis hung (SIGSTOP)                     for --hold, then SIGCONT
  instance 1 killed (SIGKILL), restarted   on its data folder
  postgres stopped                         (fast shutdown) for --hold, then started
  instance 0 restarted, redis gone         Redis killed, instance 0 stopped and
                                           started, Redis back --hold after it went

Each phase ends with --settle of healthy traffic. Prints the calls of each phase
on each instance (sent, answered, errors) and the ledger against the vendor and
the clients. Fails if a call went unanswered, an instance answered nothing in a
phase, or ledger, vendor and clients disagree.`, stderr)
	rate := fs.Float64("rate", 40, "offered calls/s over both instances")
	hold := fs.Duration("hold", 8*time.Second, "how long each store fault lasts")
	settle := fs.Duration("settle", 2*time.Second, "healthy traffic before the first fault and after each")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rate <= 0 || *hold <= 0 || *settle <= 0 {
		return errors.New("--rate, --hold and --settle must be positive")
	}
	redis.SetLogger(quietRedis{})
	slog.SetDefault(slog.New(slog.DiscardHandler))
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("drill faults: this binary: %w", err)
	}
	rep, err := drill.StoreFaults(ctx, &drill.StoreFaultsOptions{Binary: bin, Vendors: drillvendors.Server, Rate: *rate, Hold: *hold, Settle: *settle})
	return drillVerdict(stdout, "drill faults", rep, err, "calls went unanswered, or ledger, vendor and clients disagree")
}
