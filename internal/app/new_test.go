package app

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/toolhub/toolhub/hub/tracing"
)

// openUnder lists the files of this process open under dir.
func openUnder(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	abs, err := filepath.EvalSymlinks(dir)
	if err != nil {
		abs = dir // not created
	}
	var out []string
	for _, fd := range fds {
		p, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && (strings.HasPrefix(p, dir+string(filepath.Separator)) || strings.HasPrefix(p, abs+string(filepath.Separator))) {
			out = append(out, p)
		}
	}
	return out
}

// A New that fails undoes everything it did before failing: what it
// started (tracing) is stopped, what it opened (the data folder's files)
// is closed.
func TestNewThatFailsLeaksNothing(t *testing.T) {
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev); tracing.Enable(false) })
	noEnv := func(string) (string, bool) { return "", false }
	tests := []struct{ name, yaml, want string }{
		// Everything but the front door is built, then the planner's LLM
		// is refused (no model).
		{"planner last", "telemetry: {endpoint: http://127.0.0.1:1}\nplanner: {llm: {base_url: \"http://127.0.0.1:1/v1\"}}\n", "model is required"},
		// The embedded stores open, then Redis's URL is refused.
		{"redis after the data folder", "telemetry: {endpoint: http://127.0.0.1:1}\nredis: \"bogus://x\"\n", "redis"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			cfg := parse(t, fmt.Sprintf("data: %s\n%s", data, tt.yaml))
			a, err := New(t.Context(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LookupEnv: noEnv})
			if err == nil {
				a.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New failed with %v, want an error about %q", err, tt.want)
			}
			if tracing.Enabled() {
				t.Error("tracing is still on after New failed: telemetry was not shut down")
			}
			if open := openUnder(t, data); len(open) > 0 {
				t.Errorf("files still open after New failed: %v", open)
			}
		})
	}
}
