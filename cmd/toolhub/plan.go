package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/toolhub/toolhub/orchestrator"
)

// plan runs a goal on a running hub (POST /v1/plan with server-sent events)
// and prints one progress line per step, then the answer.
func plan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("plan", `"GOAL" [flags]`, "Reach a goal through a running hub's planner: rules offline, or the configured LLM.\nPrints a line per step as it runs, then the answer.", stderr)
	base := hubFlag(fs)
	mode := fs.String("mode", "auto", "auto, rules, llm or plan")
	maxSteps := fs.Int("max-steps", 0, "step budget (model turns or plan steps); 0 means the hub's default")
	asJSON := fs.Bool("json", false, "print the whole outcome as JSON at the end")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errUsage
	}
	goal := strings.Join(pos, " ")
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	hdr := http.Header{}
	if k := os.Getenv("TOOLHUB_KEY"); k != "" {
		hdr.Set("Authorization", "Bearer "+k)
	}
	out, err := orchestrator.Remote(ctx, nil, hubURL(*base), hdr, orchestrator.Request{Goal: goal, Mode: *mode, MaxSteps: *maxSteps}, func(e orchestrator.Event) {
		switch e.Type {
		case orchestrator.EventPlan:
			fmt.Fprintf(stderr, "plan %s: %s\n", e.PlanID, e.Message)
		case orchestrator.EventStepStarted:
			fmt.Fprintf(stderr, "  … %-14s %s (attempt %d)\n", e.Step, e.Tool, e.Attempt)
		case orchestrator.EventStepFinished:
			fmt.Fprintf(stderr, "  ✓ %-14s %s %.0fms\n", e.Step, e.Tool, e.LatencyMS)
		case orchestrator.EventStepFailed:
			msg := ""
			if e.Error != nil {
				msg = e.Error.Code + ": " + e.Error.Message
			}
			if e.Message != "" {
				msg += " — " + e.Message
			}
			fmt.Fprintf(stderr, "  ✗ %-14s %s %.0fms %s\n", e.Step, e.Tool, e.LatencyMS, msg)
		case orchestrator.EventModel:
			fmt.Fprintf(stderr, "  model turn %d: %s\n", e.Turn, e.Message)
		}
	})
	var uerr *url.Error
	if out == nil && errors.As(err, &uerr) && ctx.Err() == nil {
		err = fmt.Errorf("%v (is toolhub running? start it with `make run`)", err)
	}
	if out != nil {
		if *asJSON {
			if perr := printJSON(stdout, out); perr != nil {
				return perr
			}
		} else if out.Answer != "" {
			fmt.Fprintln(stdout, out.Answer)
		}
		if err == nil && out.Status != "ok" {
			fmt.Fprintf(stderr, "status %s\n", out.Status)
		}
	}
	return err
}
