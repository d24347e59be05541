package drill_test

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/drill"
)

func TestDebugOutage(t *testing.T) {
	f, _ := os.Create("/tmp/dbg/log.txt")
	defer f.Close()
	l, err := drill.NewLab(t.Context(), drill.LabOptions{Config: drill.ImageOutageConfig, Logger: slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rep, err := drill.ImageOutage(t.Context(), l, drill.ImageOutageOptions{Duration: 60 * time.Second, Rate: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
}
