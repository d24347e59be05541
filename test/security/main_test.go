package security

import (
	"os"
	"testing"

	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

// toolhubBin is the toolhub binary the end-to-end tests run as a child
// process (`toolhub serve`), built once by TestMain. TOOLHUB_TEST_BIN
// names a binary to use instead (to run these tests against another
// build of toolhub).
var toolhubBin string

func TestMain(m *testing.M) {
	if b := os.Getenv("TOOLHUB_TEST_BIN"); b != "" {
		toolhubBin = b
		os.Exit(m.Run())
	}
	os.Exit(drilltest.Run(m, "../..", &toolhubBin))
}
