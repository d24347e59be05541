// Command vendor serves toolhub's example vendors as real MCP servers.
//
//	vendor --vendor weather-a --addr 127.0.0.1:9101          # streamable HTTP at /mcp, control at /_control
//	vendor --vendor doubao --transport sse                  # SSE at /sse + /message
//	vendor --vendor sd --transport stdio                    # stdio (add --addr to get /_control)
//	vendor --all --addr 127.0.0.1:9100                      # all six at /<vendor>/mcp, /<vendor>/_control
//	vendor --vendor maps,places --mode fail --fail-rate 0.5 # faults from the start
//
// Starting knobs come from TOOLHUB_EXAMPLE_<VENDOR>_{MODE,LATENCY,FAIL_RATE,RETRY_AFTER,TOOLS}
// (VENDOR upper-cased, "-" as "_", e.g. TOOLHUB_EXAMPLE_WEATHER_A_MODE=slow), then from the
// flags given, which apply to every vendor served. See package
// github.com/toolhub/toolhub/examples/vendors for the control API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolhub/toolhub/examples/vendors"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)) // stdout may be the MCP stdio channel
	if err := run(os.Args[1:], log); err != nil {
		log.Error("vendor", "err", err)
		os.Exit(1)
	}
}

func run(args []string, log *slog.Logger) error {
	fs := flag.NewFlagSet("vendor", flag.ContinueOnError)
	names := fs.String("vendor", "", "vendors to serve, comma-separated: "+strings.Join(vendors.Names(), ", "))
	all := fs.Bool("all", false, "serve every vendor, each under /<vendor>/")
	addr := fs.String("addr", "127.0.0.1:9101", "HTTP listen address (with stdio: optional, serves only /_control)")
	transport := fs.String("transport", "http", "http (streamable HTTP), sse, or stdio")
	fs.String("mode", "", "starting fault mode: ok, fail, slow, hang, garbage, http500, http429")
	fs.String("latency", "", "starting latency added to every call, e.g. 200ms")
	fs.String("fail-rate", "", "starting fraction of calls that get the fault, 0..1")
	fs.String("retry-after", "", "Retry-After of http429, e.g. 2s")
	fs.String("tools", "", "starting visible tools, comma-separated (default all; \"\" hides all)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	t, err := vendors.ParseTransport(*transport)
	if err != nil {
		return err
	}
	list := vendors.Names()
	if !*all {
		if *names == "" {
			return fmt.Errorf("say which vendors: --vendor NAME[,NAME…] (%s) or --all", strings.Join(list, ", "))
		}
		list = strings.Split(*names, ",")
	}
	if t == vendors.Stdio && len(list) != 1 {
		return fmt.Errorf("stdio serves one vendor, got %d", len(list))
	}

	flags := map[string]string{}
	fs.Visit(func(f *flag.Flag) { flags[f.Name] = f.Value.String() })
	var vs []*vendors.Vendor
	for _, name := range list {
		k, err := knobs(name, flags)
		if err != nil {
			return err
		}
		v, err := vendors.New(name, &vendors.Options{Knobs: k})
		if err != nil {
			return err
		}
		defer v.Close()
		vs = append(vs, v)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if t == vendors.Stdio {
		if _, ok := flags["addr"]; ok {
			h := http.NewServeMux()
			h.Handle("/_control", vs[0].ControlHandler())
			go func() {
				if err := serveHTTP(ctx, *addr, h, vs, log); err != nil {
					log.Error("control endpoint", "err", err)
				}
			}()
		}
		log.Info("serving on stdio", "vendor", vs[0].Name())
		return server.NewStdioServer(vs[0].MCPServer()).Listen(ctx, os.Stdin, os.Stdout)
	}
	h, err := vendors.Handler(t, vs...)
	if err != nil {
		return err
	}
	return serveHTTP(ctx, *addr, h, vs, log)
}

// knobs returns name's starting knobs: environment first, then flags.
func knobs(name string, flags map[string]string) (vendors.Knobs, error) {
	env := "TOOLHUB_EXAMPLE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_"
	settings := map[string]string{}
	for _, key := range []string{"mode", "latency", "fail-rate", "retry-after", "tools"} {
		if val, ok := os.LookupEnv(env + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))); ok {
			settings[key] = val
		}
		if val, ok := flags[key]; ok {
			settings[key] = val
		}
	}
	var k vendors.Knobs
	var err error
	for key, val := range settings {
		switch key {
		case "mode":
			k.Mode, err = vendors.ParseMode(val)
		case "latency":
			k.Latency, err = time.ParseDuration(val)
		case "retry-after":
			k.RetryAfter, err = time.ParseDuration(val)
		case "fail-rate":
			k.FailRate, err = strconv.ParseFloat(val, 64)
		case "tools":
			k.Tools = []string{}
			if val != "" {
				k.Tools = strings.Split(val, ",")
			}
		}
		if err != nil {
			return k, fmt.Errorf("vendor %q: %s %q: %w", name, key, val, err)
		}
	}
	return k, nil
}

// serveHTTP serves h on addr until ctx ends, then releases hanging calls and shuts down.
func serveHTTP(ctx context.Context, addr string, h http.Handler, vs []*vendors.Vendor, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	for _, v := range vs {
		base := "http://" + ln.Addr().String()
		if len(vs) > 1 {
			base += "/" + v.Name()
		}
		log.Info("serving", "vendor", v.Name(), "base", base, "control", base+"/_control")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	for _, v := range vs {
		v.Close()
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		srv.Close() // SSE and GET streams never finish on their own
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
