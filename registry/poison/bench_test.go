package poison_test

import (
	"strings"
	"testing"

	"github.com/toolhub/toolhub/registry/poison"
)

// BenchmarkScanText scans 1 MiB of clean result text (a result_scan
// vendor's large answer).
func BenchmarkScanText(b *testing.B) {
	text := strings.Repeat("Sunny, 21°C, humidity 40%. The forecast for Paris: light rain later. 明天多云。\n", 1<<20/90)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		poison.ScanText("content/0/text", text)
	}
}
