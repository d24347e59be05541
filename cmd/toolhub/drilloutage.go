package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
)

// drillOutageCmd is `toolhub drill outage`: both image vendors down under
// load, then back; what became of the calls and of the queued jobs.
func drillOutageCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("drill outage", "[flags]", `Take both image vendors (doubao and sd) down for --duration under load (--rate
calls/s of image.generate, half new prompts, half repeats of cached ones), then
restore them. Reports the answers within 1s during the outage (stale or queued),
the jobs completed after recovery, the time from recovery to completion (median,
p99), and pushes and charges per job. Runs a hub and the example vendors in
process (config: internal/drill.ImageOutageConfig: probes every 500ms, 250ms
ramp steps; with --defaults, ImageOutageDefaultsConfig: no probes, the default
cool-down and ramp, as users run it).`, stderr)
	duration := fs.Duration("duration", 60*time.Second, "how long both vendors are down")
	rate := fs.Float64("rate", 20, "offered calls/s")
	fault := fs.String("fault", "http500", "how the vendors are down: fail, slow, hang, garbage, http500, http429")
	defaults := fs.Bool("defaults", false, "run on the default probes, cool-down and ramp (no business probes)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the drain (recovery until every job is final) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *duration <= 0 || *rate <= 0 {
		return fmt.Errorf("--duration and --rate must be positive")
	}
	mode, err := vendors.ParseMode(*fault)
	if err != nil || mode == vendors.ModeOK {
		return fmt.Errorf("--fault %q: want fail, slow, hang, garbage, http500 or http429", *fault)
	}
	slog.SetDefault(slog.New(slog.DiscardHandler))
	cfg := drill.ImageOutageConfig
	if *defaults {
		cfg = drill.ImageOutageDefaultsConfig
	}
	l, err := drill.NewLab(ctx, drill.LabOptions{Config: cfg, Vendors: drillvendors.Server})
	if err != nil {
		return err
	}
	defer l.Close()
	opts := drill.ImageOutageOptions{Duration: *duration, Rate: *rate, Fault: drill.Fault(mode)}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		opts.Profile = f
	}
	rep, err := drill.ImageOutage(ctx, l, opts)
	return drillVerdict(stdout, "drill outage", rep, err, "jobs were lost, pushed or charged twice, or calls went unanswered")
}
