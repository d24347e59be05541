package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
)

// limiterFlags are bench's --limiter flags: limiter accuracy across
// instances, several hubs on one Redis limit.
type limiterFlags struct {
	on    *bool
	hubs  *int
	rate  *float64
	burst *int
	redis *string
}

func addLimiterFlags(fs *flag.FlagSet) limiterFlags {
	return limiterFlags{
		on:    fs.Bool("limiter", false, "instead: measure limiter accuracy across instances: --hubs hubs on one Redis limit for --duration, admitted vs burst + rate·span"),
		hubs:  fs.Int("hubs", 3, "with --limiter: hubs sharing the limit"),
		rate:  fs.Float64("limit-rate", 100, "with --limiter: the shared limit, calls/s"),
		burst: fs.Int("limit-burst", 50, "with --limiter: the shared limit's burst"),
		redis: fs.String("redis", envOr("TOOLHUB_DRILL_REDIS", drill.DefaultRedis), "with --limiter: Redis host:port (env TOOLHUB_DRILL_REDIS)"),
	}
}

func benchLimiter(ctx context.Context, f limiterFlags, span time.Duration, stdout io.Writer) error {
	rep, err := drill.SharedLimit(ctx, &drill.LimiterOptions{Vendors: drillvendors.Server, Hubs: *f.hubs, Rate: *f.rate, Burst: *f.burst, Span: span, Redis: *f.redis})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, rep)
	return nil
}
