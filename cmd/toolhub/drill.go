package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
)

// allFaults is what `toolhub drill` runs by default: the vendor faults,
// then the shared stores going away, then an instance killed.
const allFaults = "fail,slow,garbage,http500,redis,postgres,instance"

// drillUsage is `toolhub drill --help`'s text.
const drillUsage = `Run fault drills: a hub and the example vendors, calls at a steady rate, a fault
injected, healed, and the ledger checked. Each prints time to detect, time to fall
back, success during the fault, time to recover and usage events lost (must be 0).

  fail, slow, hang, garbage, http500, http429
      the primary of weather.current breaks (in process); weather-b takes over.
      Breaker cool-downs are shortened so it fits.
  redis
      limits and cache in Redis (behind a proxy the drill cuts); calls go on
      under local limits at rate/instances, then return to Redis.
  postgres
      registry and ledger in PostgreSQL (behind a proxy the drill cuts); calls
      go on, usage events spill to the local log and are replayed after.
  instance
      --instances toolhub serve processes (this binary) on one Redis and
      PostgreSQL; one is killed with SIGKILL mid-load with jobs running, the
      client retries on the others, the jobs are reclaimed, the instance is
      restarted on its data folder and the ledger checked against the vendors.

outage (toolhub drill outage --help)
      both image vendors down under load for --duration, then back: what
      became of the calls and the queued jobs.

faults (toolhub drill faults --help)
      two instances on a Redis and a PostgreSQL of the drill's own: Redis hung,
      an instance killed, PostgreSQL stopped, an instance restarted while Redis
      is gone; answers per phase and instance, ledger = vendor = clients.

redis, postgres and instance need the Redis and PostgreSQL of --redis and
--postgres (make services); they use a key prefix and a schema of their own.`

// drillCmd runs fault drills: a hub and the example vendors, real traffic,
// a fault, and what happened.
func drillCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "outage" {
		return drillOutageCmd(ctx, args[1:], stdout, stderr) // drilloutage.go
	}
	if len(args) > 0 && args[0] == "faults" {
		return drillFaultsCmd(ctx, args[1:], stdout, stderr) // drillfaults.go
	}
	fs := flags("drill", "[flags]", drillUsage, stderr)
	rate := fs.Float64("rate", 200, "offered calls/s")
	hold := fs.Duration("hold", time.Second, "how long each fault lasts once the hub noticed it")
	faults := fs.String("faults", allFaults, "faults to drill: fail, slow, hang, garbage, http500, http429, redis, postgres, instance")
	redisAddr := fs.String("redis", envOr("TOOLHUB_DRILL_REDIS", drill.DefaultRedis), "Redis host:port for the redis and instance drills (env TOOLHUB_DRILL_REDIS)")
	pg := fs.String("postgres", envOr("TOOLHUB_DRILL_POSTGRES", drill.DefaultPostgres), "PostgreSQL URL for the postgres and instance drills (env TOOLHUB_DRILL_POSTGRES)")
	instances := fs.Int("instances", 3, "toolhub processes in the instance drill")
	jobs := fs.Int("jobs", 6, "image jobs running when the instance is killed")
	short := fs.Bool("short", false, "the CI version: --rate 100 --hold 300ms --jobs 4 unless set")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *short {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["rate"] {
			*rate = 100
		}
		if !set["hold"] {
			*hold = 300 * time.Millisecond
		}
		if !set["jobs"] {
			*jobs = 4
		}
	}
	// A cut Redis makes go-redis log every failed dial to stderr: the
	// drill's report says what happened.
	redis.SetLogger(quietRedis{})
	// So does the PostgreSQL registry's listener, on the default logger.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	list, err := parseFaults(*faults)
	if err != nil {
		return err
	}
	failed := 0
	for _, f := range list {
		oo := &drill.OutageOptions{Vendors: drillvendors.Server, Rate: *rate, Hold: *hold, Redis: *redisAddr, Postgres: *pg}
		rep, err := runDrill(ctx, f, oo, *instances, *jobs)
		if err != nil {
			return fmt.Errorf("drill %s: %w", f, err)
		}
		fmt.Fprintln(stdout, rep)
		if !rep.Ok() {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d drill(s) lost calls, jobs or usage events", failed)
	}
	return nil
}

// parseFaults is --faults' list: each a vendor mode or redis, postgres,
// instance.
func parseFaults(faults string) ([]string, error) {
	var list []string
	for _, f := range strings.Split(faults, ",") {
		f = strings.TrimSpace(f)
		switch f {
		case "redis", "postgres", "instance":
		default:
			if m, err := vendors.ParseMode(f); err != nil || m == vendors.ModeOK {
				return nil, fmt.Errorf("unknown fault %q: want fail, slow, hang, garbage, http500, http429, redis, postgres or instance", f)
			}
		}
		list = append(list, f)
	}
	return list, nil
}

// runDrill runs the drill of one fault: the store outages, the instance
// kill (instances processes of this binary, jobs image jobs) or a vendor
// fault.
// drillVerdict prints the report of the drill name and fails, saying notOk,
// when the report is not ok; a drill that could not run fails with its
// error.
func drillVerdict(stdout io.Writer, name string, rep interface{ Ok() bool }, err error, notOk string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintln(stdout, rep)
	if !rep.Ok() {
		return fmt.Errorf("%s: %s", name, notOk)
	}
	return nil
}

func runDrill(ctx context.Context, f string, oo *drill.OutageOptions, instances, jobs int) (interface{ Ok() bool }, error) {
	switch f {
	case "redis":
		return drill.RedisOutage(ctx, oo)
	case "postgres":
		return drill.PostgresOutage(ctx, oo)
	case "instance":
		bin, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("drill instance: this binary: %w", err)
		}
		return drill.InstanceKill(ctx, &drill.InstanceOptions{Binary: bin, Instances: instances, Rate: oo.Rate, Jobs: jobs,
			Redis: oo.Redis, Postgres: oo.Postgres, Vendors: drillvendors.Server})
	}
	return vendorDrill(ctx, f, oo.Rate, oo.Hold)
}

// vendorDrill breaks weather-a with fault in an in-process lab.
func vendorDrill(ctx context.Context, fault string, rate float64, hold time.Duration) (interface{ Ok() bool }, error) {
	mode, err := vendors.ParseMode(fault)
	if err != nil {
		return nil, err
	}
	l, err := drill.NewLab(ctx, drill.LabOptions{Config: drill.FailoverConfig, Vendors: drillvendors.Server})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return drill.Failover(ctx, l, rate, hold, drill.Fault(mode))
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
