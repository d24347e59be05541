package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/internal/app"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/internal/x/batchwrite"
	"github.com/toolhub/toolhub/internal/x/gcfloor"
)

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("serve", "[flags]", "Run the hub. Without --config it runs on the embedded defaults: the example\nvendors on 127.0.0.1:9100 and the hub on 127.0.0.1:8080. SIGHUP reloads the config.", stderr)
	cfgPath := fs.String("config", os.Getenv("TOOLHUB_CONFIG"), "config file (toolhub.yaml); empty: embedded defaults (env TOOLHUB_CONFIG)")
	addr := fs.String("addr", "", "listen address, overrides the config's addr")
	data := fs.String("data", "", "data folder, overrides the config's data")
	stdio := fs.Bool("stdio", false, "serve MCP on stdin/stdout instead of HTTP (logs go to stderr)")
	tenant := fs.String("tenant", api.DefaultTenant, "with --stdio: the tenant the stdio client calls as")
	gcHeadroom := fs.Int("gc-headroom", 32, "MiB the heap may grow over its live size before a garbage collection, when that is more\nthan GOGC allows (a small live heap); 0: GOGC alone. Ignored when the GOGC environment variable is set")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" {
		defer gcfloor.Start(int64(*gcHeadroom) << 20)()
	}
	// load reads the config with the flags' overrides, at start and on SIGHUP.
	load := func() (*config.Config, error) {
		cfg, err := config.Load(*cfgPath)
		if err != nil {
			return nil, err
		}
		if *addr != "" {
			cfg.Addr = *addr
		}
		if *data != "" {
			cfg.Data = *data
		}
		return cfg, cfg.Validate()
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	stopProfiles, err := startProfiles()
	if err != nil {
		return err
	}
	defer stopProfiles()
	// The log (a decision-log line per call) is batched: a call copies its
	// line into the pending batch, one goroutine writes each batch with
	// one write(2). Closed last, after the app has logged its stop.
	logw := batchwrite.New(stderr, nil)
	defer logw.Close()
	log := newLogger(logw, cfg.LogLevel)
	if cfg.Examples != nil { // examples.go; started first, so the hub finds them at once
		ex, err := startExamples(cfg.Examples.Addr, log)
		if err != nil {
			return err
		}
		defer ex.close() // after the hub closes
	}
	a, err := app.New(ctx, cfg, &app.Options{Version: shortVersion(), Logger: log})
	if err != nil {
		return err
	}
	defer a.Close()
	// Registered before the hub listens: a SIGHUP from then on reloads.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go reloadOnHUP(ctx, a, hup, *cfgPath, load, log)

	if *stdio {
		log.Info("serving MCP on stdio", "tenant", *tenant)
		return a.API.ServeStdio(ctx, *tenant, os.Stdin, stdout)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %v", cfg.Addr, err)
	}
	log.Info("toolhub listening", "addr", ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp",
		"vendors", len(cfg.Vendors), "capabilities", len(cfg.Capabilities), "version", shortVersion())
	if !cfg.Auth.Enabled {
		log.Info("no authentication configured: listening on loopback only; every caller is an operator calling as tenant \"default\"")
	}
	return a.Serve(ctx, ln)
}

// reloadOnHUP re-reads the config on SIGHUP. A bad config, or one that
// changes keys only a restart applies, is refused with one log line and
// the old one keeps serving.
func reloadOnHUP(ctx context.Context, a *app.App, hup <-chan os.Signal, path string, load func() (*config.Config, error), log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		cfg, err := load()
		if err == nil {
			err = a.Reload(ctx, cfg)
		}
		if err != nil {
			log.Error("config reload refused; the old config keeps serving", "config", path, "err", err)
			continue
		}
		log.Info("config reloaded", "config", path, "vendors", len(cfg.Vendors), "capabilities", len(cfg.Capabilities))
	}
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	// The same lines as slog.NewJSONHandler, the decision log's written faster.
	return slog.New(govern.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}
