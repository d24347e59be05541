package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
)

// drillCmd runs fault drills: a hub and the example vendors in this
// process, real traffic, a fault in the primary vendor, and what happened.
func drillCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("drill", "[flags]", "Run fault drills in process: a hub and the example vendors, weather.current at a steady rate,\nthe primary vendor broken (each fault in turn), healed, and the ledger checked.\nEach prints time to detect, time to fall back, success during the fault, time to\nrecover and usage events lost (must be 0). Breaker cool-downs are shortened so it fits.", stderr)
	rate := fs.Float64("rate", 200, "offered calls/s")
	hold := fs.Duration("hold", time.Second, "how long each fault lasts after the breaker opened")
	faults := fs.String("faults", "fail,slow,garbage,http500", "faults to drill: fail, slow, hang, garbage, http500, http429")
	if err := fs.Parse(args); err != nil {
		return err
	}
	failed := 0
	for _, f := range strings.Split(*faults, ",") {
		mode, err := vendors.ParseMode(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		l, err := drill.NewLab(ctx, drill.LabOptions{Config: drill.FailoverConfig})
		if err != nil {
			return err
		}
		rep, err := drill.Failover(ctx, l, *rate, *hold, mode)
		l.Close()
		if err != nil {
			return fmt.Errorf("drill %s: %w", mode, err)
		}
		fmt.Fprintln(stdout, rep)
		if rep.ClientErrors != 0 || rep.EventsLost != 0 || rep.EventsExtra != 0 {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d drill(s) lost calls or usage events", failed)
	}
	return nil
}
