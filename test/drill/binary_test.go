package drill_test

import (
	stdcontext "context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

// The toolhub binary the process drills run, built once for the package
// (the first test that needs it builds it) and removed by TestMain.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// toolhubBinary returns the path of a toolhub built from this module.
func toolhubBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "toolhub-drill-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "toolhub")
		binErr = drilltest.BuildBinary(stdcontext.Background(), "../..", binPath)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}
